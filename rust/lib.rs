//! `mcpfast._rust`: the compiled codec. `mcpfast._codec_py` is its pure-Python twin and
//! specification: for arguments of the types the stub (`_rust.pyi`) declares, every function
//! here returns and raises exactly what the twin does; arguments of other types are refused
//! with `TypeError`.
//!
//! This file only registers the module. The logic lives in plain Rust (`json`, `frame`,
//! `headers`, `token`, `http`, unit-tested with `cargo test`); each of those ends with a thin `py`
//! module of `PyO3` glue, built with the `python` feature (on by default; the fuzz targets in
//! `fuzz/` build without it). The twin mirrors these files one to one: `_codec_py/frame.py`,
//! `headers.py`, `token.py`, `http.py` and `json.py`; its `__init__` is this file.
//!
//! The Python-facing values are typed: `Message` and `Head` are frozen classes with named
//! members, `Kind` an `IntEnum` whose members are the `KIND_*` constants.

#[cfg(feature = "python")]
pub mod args;
#[cfg(feature = "python")]
pub mod errors;
pub mod frame;
pub mod headers;
pub mod http;
pub mod json;
pub mod loadgen;
pub mod token;

#[cfg(feature = "python")]
use pyo3::prelude::*;
#[cfg(feature = "python")]
use pyo3::types::PyDict;

#[cfg(feature = "python")]
#[pymodule]
fn _rust(module: &Bound<'_, PyModule>) -> PyResult<()> {
    add_kinds(module)?;
    module.add_class::<frame::py::PyMessage>()?;
    module.add_class::<http::py::PyHead>()?;
    module.add_function(wrap_pyfunction!(frame::py::py_frame, module)?)?;
    module.add_function(wrap_pyfunction!(headers::py::py_check_headers, module)?)?;
    module.add_function(wrap_pyfunction!(
        headers::py::py_encode_header_value,
        module
    )?)?;
    module.add_function(wrap_pyfunction!(token::py::py_mint_token, module)?)?;
    module.add_function(wrap_pyfunction!(token::py::py_verify_token, module)?)?;
    module.add_function(wrap_pyfunction!(http::py::py_parse_head, module)?)?;
    module.add_function(wrap_pyfunction!(http::py::py_take_head, module)?)?;
    module.add_function(wrap_pyfunction!(http::py::py_response, module)?)?;
    module.add_function(wrap_pyfunction!(http::py::py_scope_head, module)?)?;
    module.add_function(wrap_pyfunction!(loadgen::py::py_run_load, module)?)?;
    Ok(())
}

/// `Kind`, the `IntEnum` of a message's kinds (the twin's `Kind`), and its members as `KIND_*`.
#[cfg(feature = "python")]
fn add_kinds(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    let members = [
        ("REQUEST", frame::KIND_REQUEST),
        ("NOTIFICATION", frame::KIND_NOTIFICATION),
        ("RESULT", frame::KIND_RESULT),
        ("ERROR", frame::KIND_ERROR),
        ("INVALID", frame::KIND_INVALID),
    ];
    let options = PyDict::new(py);
    options.set_item("module", "mcpfast._rust")?;
    let kind = py
        .import("enum")?
        .getattr("IntEnum")?
        .call(("Kind", members), Some(&options))?;
    for (name, _) in members {
        module.add(format!("KIND_{name}"), kind.getattr(name)?)?;
    }
    module.add("Kind", kind)
}
