//! What answers say instead of the server's file system paths (docs/SERVER.md "Errors"): the
//! book is named by its file name alone, an upload is "the upload".

/// What answers call the request's body instead of the path it was stored at.
pub(crate) const UPLOAD_NAME: &str = "the upload";

/// `text` without the directory of `book` (as given and canonical) and with upload paths
/// (`.bookdb-upload-XXXX/upload`) said as "the upload".
pub(crate) fn redact_paths(text: &str, book: &std::path::Path) -> String {
    let mut out = text.to_string();
    let dir = crate::store::files::dir_of(book);
    let mut dirs = vec![dir.to_path_buf()];
    if let Ok(c) = std::fs::canonicalize(dir) {
        dirs.push(c);
    }
    for d in dirs {
        let d = d.display().to_string();
        if !d.is_empty() && d != "." {
            // As JSON escapes it too (a path inside an error's JSON string).
            for form in [format!("{d}/"), format!("{}/", d.replace('/', "\\/"))] {
                out = out.replace(&form, "");
            }
        }
    }
    while let Some(found) = out.find(".bookdb-upload-") {
        let tail = &out[found..];
        let end = tail
            .find("/upload")
            .map(|i| i + "/upload".len())
            .filter(|&i| !tail[..i].contains([' ', '"', '\'']))
            .unwrap_or_else(|| tail.find([' ', '"', '\'', ':']).unwrap_or(tail.len()));
        // A book in the working directory names its upload `./.bookdb-upload-…`: the `./`
        // goes too (a `./` that ends a longer path is that path's, already taken out above).
        let start = match out[..found].strip_suffix("./") {
            Some(before) if !before.ends_with(|c: char| c != ' ' && c != '"' && c != '\'') => {
                found - 2
            }
            _ => found,
        };
        out.replace_range(start..found + end, UPLOAD_NAME);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_are_the_upload_wherever_the_book_is() {
        for (book, text) in [
            (
                "t.book",
                "the body was not imported: ./.bookdb-upload-Ab12/upload: binary",
            ),
            (
                "/srv/b/t.book",
                "the body was not imported: /srv/b/.bookdb-upload-Ab12/upload: binary",
            ),
        ] {
            assert_eq!(
                redact_paths(text, std::path::Path::new(book)),
                "the body was not imported: the upload: binary"
            );
        }
        // In JSON, a quoted upload path.
        assert_eq!(
            redact_paths(
                r#"["./.bookdb-upload-x/upload"]"#,
                std::path::Path::new("t.book")
            ),
            r#"["the upload"]"#
        );
    }
}
