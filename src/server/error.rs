//! The server's JSON answers: errors (a status and `{"error": "…"}`, never a stack trace or a
//! panic message) and the success wrapper that says which book generation answered.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::{Error, ErrorKind};

/// An error answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn too_long(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::URI_TOO_LONG, message)
    }

    /// The answer for a library error: the user's mistakes are 400, a busy book 503, the rest
    /// 500 (logged in full by the caller; the client gets the message, which names no secret).
    pub fn from_lib(e: &Error) -> ApiError {
        let status = match e.kind() {
            ErrorKind::Usage | ErrorKind::Input => StatusCode::BAD_REQUEST,
            ErrorKind::Busy => StatusCode::SERVICE_UNAVAILABLE,
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::Corrupt | ErrorKind::NotABook | ErrorKind::Io | ErrorKind::Internal => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        ApiError::new(status, e.to_string())
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        ApiError::from_lib(&e)
    }
}

/// `{"error": message}` with `status`.
pub fn json_error(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": message }).to_string();
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    }
    r
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::warn!(status = self.status.as_u16(), error = %self.message, "request failed");
        }
        json_error(self.status, &self.message)
    }
}

/// A JSON answer, computed from the book state `served` when there is one: its generation
/// and state tag are said in headers, so clients and tests can tell which state answered.
pub fn json_ok(body: String, served: Option<&crate::store::Book>) -> Response {
    let mut r = body.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(book) = served {
        let h = r.headers_mut();
        h.insert("x-bookdb-generation", HeaderValue::from(book.generation()));
        if let Ok(v) = HeaderValue::from_str(book.state_tag()) {
            h.insert("x-bookdb-state", v);
        }
    }
    r
}
