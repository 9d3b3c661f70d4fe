//! The Python exceptions the codec raises: `mcpfast.errors.CodecError`, `TokenError` and
//! `HttpError`, imported once from Python so that both backends raise the very same classes.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyType};

static CODEC_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static TOKEN_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static HTTP_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Instantiates `cls(*args)` as the error to raise (or the error that instantiating raised).
fn raise<'py>(cls: PyResult<&Bound<'py, PyType>>, args: impl pyo3::call::PyCallArgs<'py>) -> PyErr {
    match cls.and_then(|cls| cls.call1(args)) {
        Ok(error) => PyErr::from_value(error),
        Err(error) => error,
    }
}

/// `CodecError(code, message, data)`.
pub fn codec_error(
    py: Python<'_>,
    code: i32,
    message: &Bound<'_, PyAny>,
    data: Option<Bound<'_, PyDict>>,
) -> PyErr {
    raise(
        CODEC_ERROR.import(py, "mcpfast.errors", "CodecError"),
        (code, message, data),
    )
}

/// `CodecError(-32700, "Parse error", None)`.
pub fn parse_error(py: Python<'_>) -> PyErr {
    codec_error(py, -32700, pyo3::intern!(py, "Parse error"), None)
}

/// `CodecError(-32600, "Invalid Request", {"reason": reason, **extra})`.
pub fn invalid_request(
    py: Python<'_>,
    reason: &str,
    extra: Option<(&str, &Bound<'_, PyAny>)>,
) -> PyErr {
    let data = PyDict::new(py);
    let filled = data
        .set_item(pyo3::intern!(py, "reason"), reason)
        .and_then(|()| extra.map_or(Ok(()), |(key, value)| data.set_item(key, value)));
    if let Err(error) = filled {
        return error;
    }
    codec_error(py, -32600, pyo3::intern!(py, "Invalid Request"), Some(data))
}

/// `CodecError(-32020, f"Header mismatch: {header} {reason}", {"header": header, "reason": reason})`.
/// `header` is a Python str: a parameter header's name need not have a UTF-8 form.
pub fn header_error(py: Python<'_>, header: &Bound<'_, PyString>, reason: &str) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let message = PyString::new(py, "Header mismatch: ")
            .add(header)?
            .add(format!(" {reason}"))?;
        let data = PyDict::new(py);
        data.set_item(pyo3::intern!(py, "header"), header)?;
        data.set_item(pyo3::intern!(py, "reason"), reason)?;
        Ok(codec_error(py, -32020, &message, Some(data)))
    };
    build().unwrap_or_else(|error| error)
}

/// `TokenError(reason)`.
pub fn token_error(py: Python<'_>, reason: &str) -> PyErr {
    raise(
        TOKEN_ERROR.import(py, "mcpfast.errors", "TokenError"),
        (reason,),
    )
}

/// `HttpError(status, reason)`.
pub fn http_error(py: Python<'_>, status: u16, reason: &str) -> PyErr {
    raise(
        HTTP_ERROR.import(py, "mcpfast.errors", "HttpError"),
        (status, reason),
    )
}
