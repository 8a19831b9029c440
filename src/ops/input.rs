//! Opening PGN inputs: plain, zstd, gzip or bzip2 (by magic bytes, falling back to the file
//! extension), or `-` for standard input.

use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Plain,
    Zstd,
    Gzip,
    Bzip2,
}

impl Format {
    pub(crate) fn sniff(head: &[u8], name: &str) -> Format {
        if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Format::Zstd
        } else if head.starts_with(&[0x1f, 0x8b]) {
            Format::Gzip
        } else if head.starts_with(b"BZh") && head.len() > 3 && head[3].is_ascii_digit() {
            Format::Bzip2
        } else if name.ends_with(".zst") && head.is_empty() {
            Format::Zstd
        } else {
            Format::Plain
        }
    }
}

/// Counts bytes read from the underlying (possibly compressed) source, for progress display.
pub(crate) struct CountingReader<R> {
    inner: R,
    counter: std::sync::Arc<std::sync::atomic::AtomicU64>,
    hasher: Option<RawHasher>,
}

/// xxh3-128 of the raw bytes read so far (the input's fingerprint once it is read to the end).
pub(crate) type RawHasher = std::sync::Arc<std::sync::Mutex<xxhash_rust::xxh3::Xxh3>>;

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        if let Some(h) = &self.hasher
            && let Ok(mut h) = h.lock()
        {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// An opened input: a decompressed byte stream plus what is known of its size.
#[doc(hidden)]
pub struct Input {
    pub(crate) name: String,
    pub reader: Box<dyn Read + Send>,
    /// Size of the raw (possibly compressed) file, when it is a regular file.
    pub(crate) raw_size: Option<u64>,
    /// Raw bytes consumed so far.
    pub(crate) raw_read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// For standard input: the running fingerprint of the raw bytes (files are fingerprinted
    /// before reading).
    pub(crate) raw_hash: Option<RawHasher>,
}

#[doc(hidden)]
pub fn open(path: &str) -> Result<Input> {
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (raw, raw_size, name): (Box<dyn Read + Send>, Option<u64>, String) = if path == "-" {
        (Box::new(io::stdin()), None, "<stdin>".to_string())
    } else {
        let f = std::fs::File::open(Path::new(path))
            .map_err(|e| Error::io(format!("cannot open PGN input {path}"), e))?;
        let size = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
        (Box::new(f), size, path.to_string())
    };
    let raw_hash: Option<RawHasher> = (path == "-")
        .then(|| std::sync::Arc::new(std::sync::Mutex::new(xxhash_rust::xxh3::Xxh3::new())));
    let counting = CountingReader {
        inner: raw,
        counter: counter.clone(),
        hasher: raw_hash.clone(),
    };
    let mut buffered = BufReader::with_capacity(1 << 16, counting);
    let head = buffered
        .fill_buf()
        .map_err(|e| Error::io(format!("reading {name}"), e))?
        .get(..4)
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    let format = Format::sniff(&head, &name);
    let reader: Box<dyn Read + Send> = match format {
        Format::Plain => Box::new(buffered),
        Format::Zstd => Box::new(
            zstd::stream::read::Decoder::with_buffer(buffered)
                .map_err(|e| Error::io(format!("starting zstd on {name}"), e))?,
        ),
        Format::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(buffered)),
        Format::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(buffered)),
    };
    Ok(Input {
        name,
        reader,
        raw_size,
        raw_read: counter,
        raw_hash,
    })
}
