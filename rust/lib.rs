//! `mcpfast._rust`: the compiled codec. `mcpfast._codec_py` is its pure-Python twin and
//! specification: for arguments of the types the stub (`_rust.pyi`) declares, every function
//! here returns and raises exactly what the twin does; arguments of other types are refused
//! with `TypeError`.
//!
//! This file only registers the module. The logic lives in plain Rust (`json`, `frame`,
//! `headers`, `token`, `http`, unit-tested with `cargo test`); each of those ends with a thin `py`
//! module of `PyO3` glue, built with the `python` feature (on by default; the fuzz targets in
//! `fuzz/` build without it).

#[cfg(feature = "python")]
pub mod args;
#[cfg(feature = "python")]
pub mod errors;
pub mod frame;
pub mod headers;
pub mod http;
pub mod json;
pub mod token;

#[cfg(feature = "python")]
use pyo3::prelude::*;

#[cfg(feature = "python")]
#[pymodule]
fn _rust(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("KIND_REQUEST", frame::KIND_REQUEST)?;
    module.add("KIND_NOTIFICATION", frame::KIND_NOTIFICATION)?;
    module.add("KIND_RESULT", frame::KIND_RESULT)?;
    module.add("KIND_ERROR", frame::KIND_ERROR)?;
    module.add("KIND_INVALID", frame::KIND_INVALID)?;
    module.add_class::<frame::py::PyMessage>()?;
    module.add_function(wrap_pyfunction!(frame::py::py_frame, module)?)?;
    module.add_function(wrap_pyfunction!(headers::py::py_check_headers, module)?)?;
    module.add_function(wrap_pyfunction!(
        headers::py::py_encode_header_value,
        module
    )?)?;
    module.add_function(wrap_pyfunction!(token::py::py_mint_token, module)?)?;
    module.add_function(wrap_pyfunction!(token::py::py_verify_token, module)?)?;
    module.add_function(wrap_pyfunction!(http::py::py_parse_head, module)?)?;
    let head = module.py().eval(
        c"tuple[str, str, int, dict[str, str], int | None, bool]",
        None,
        None,
    )?;
    module.add("Head", head)?;
    Ok(())
}
