//! Reading arguments the way the twin's Python code reads them.

use std::borrow::Cow;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyInt};

/// An `int` argument: small ones are handled in Rust; anything else (a huge int, a bool, a
/// float...) goes through Python's own operators, exactly as in the twin.
pub enum IntArg<'py> {
    Small(i64),
    Other(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for IntArg<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_exact_instance_of::<PyInt>() {
            if let Ok(value) = obj.extract::<i64>() {
                return Ok(IntArg::Small(value));
            }
        }
        Ok(IntArg::Other(obj.to_owned()))
    }
}

impl<'py> IntArg<'py> {
    /// The argument as a Python object.
    pub fn object(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            IntArg::Small(value) => Ok(value.into_pyobject(py)?.into_any()),
            IntArg::Other(value) => Ok(value.clone()),
        }
    }
}

/// The bytes of a `bytes` or `bytearray`, else `None`.
pub fn bytes_of<'a>(obj: &'a Bound<'_, PyAny>) -> Option<Cow<'a, [u8]>> {
    if let Ok(bytes) = obj.cast::<PyBytes>() {
        return Some(Cow::Borrowed(bytes.as_bytes()));
    }
    obj.cast::<PyByteArray>()
        .ok()
        .map(|array| Cow::Owned(array.to_vec()))
}

/// The bytes of any bytes-like object, or binascii's `TypeError`.
pub fn bytes_like<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Some(bytes) = bytes_of(obj) {
        return Ok(bytes);
    }
    if let Ok(buffer) = PyBuffer::<u8>::get(obj) {
        return Ok(Cow::Owned(buffer.to_vec(obj.py())?));
    }
    Err(PyTypeError::new_err(format!(
        "a bytes-like object is required, not '{}'",
        type_name(obj)
    )))
}

/// `type(obj).__name__`.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |name| name.to_string())
}
