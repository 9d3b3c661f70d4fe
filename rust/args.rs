//! Reading arguments the way the twin's Python code reads them.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

/// The bytes of a `bytes` or `bytearray`, else `None`.
pub fn bytes_of<'a>(obj: &'a Bound<'_, PyAny>) -> Option<Cow<'a, [u8]>> {
    if let Ok(bytes) = obj.cast::<PyBytes>() {
        return Some(Cow::Borrowed(bytes.as_bytes()));
    }
    obj.cast::<PyByteArray>()
        .ok()
        .map(|array| Cow::Owned(array.to_vec()))
}
