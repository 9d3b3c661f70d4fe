//! The fast load engine of `mcpfast load --engine fast` (`run_load`): one OS thread per
//! connection, blocking keep-alive sockets, prebuilt HTTP/1.1 requests, no Python while it runs
//! (the GIL released). `mcpfast.load.engine_trio` is its twin and specification: the same
//! schedule (`arrival`), histogram buckets (`bucket`, `mcpfast.load.hdr.bucket`), answer keys
//! (`answer_key`) and failure texts, so the two tallies of one run against one server agree.
//!
//! Answers are not judged here: identical ones are counted together, at most `DISTINCT` per
//! request kind, and judged once each in Python (`mcpfast.load.wire.judge`).

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Distinct answers kept per request kind; more are counted as one failure kind.
pub const DISTINCT: usize = 64;
/// A request sent this many microseconds after its scheduled time was sent late.
pub const LATE_US: u64 = 1000;
const SUB_BUCKETS: u64 = 2048;
const HALF: u64 = SUB_BUCKETS / 2;
const BITS: u32 = 11;
const HEAD_LIMIT: usize = 65536;

const TOO_VARIED: &str = "more than 64 distinct answers (the rest unjudged)";
const TIMEOUT: &str = "Timeout(no answer in time)";
const CONNECT: &str = "ConnectionError(connect failed)";
const CLOSED: &str = "ConnectionError(closed)";
const RESET: &str = "ConnectionError(reset)";
const NOT_HTTP: &str = "ProtocolError(not an HTTP/1.1 response)";

/// Status, content type, body (an SSE body without its `id:` lines).
pub type Key = (u16, String, Vec<u8>);

/// One request kind's tally.
#[derive(Debug, Default, Clone)]
pub struct Kind {
    pub answers: HashMap<Key, u64>,
    pub counts: HashMap<u32, u64>,
    pub sum_us: u64,
    pub max_us: u64,
    pub errors: HashMap<String, u64>,
}

impl Kind {
    fn answered(&mut self, key: Key, micros: u64) {
        if self.answers.contains_key(&key) || self.answers.len() < DISTINCT {
            *self.answers.entry(key).or_insert(0) += 1;
        } else {
            self.failed(TOO_VARIED);
        }
        *self.counts.entry(bucket(micros)).or_insert(0) += 1;
        self.sum_us += micros;
        self.max_us = self.max_us.max(micros);
    }

    fn failed(&mut self, text: &str) {
        *self.errors.entry(text.to_owned()).or_insert(0) += 1;
    }

    fn merge(&mut self, other: Kind) {
        for (key, count) in other.answers {
            if self.answers.contains_key(&key) || self.answers.len() < DISTINCT {
                *self.answers.entry(key).or_insert(0) += count;
            } else {
                *self.errors.entry(TOO_VARIED.to_owned()).or_insert(0) += count;
            }
        }
        for (index, count) in other.counts {
            *self.counts.entry(index).or_insert(0) += count;
        }
        for (text, count) in other.errors {
            *self.errors.entry(text).or_insert(0) += count;
        }
        self.sum_us += other.sum_us;
        self.max_us = self.max_us.max(other.max_us);
    }
}

/// A run's tally: per request kind, late sends, the largest lag, the seconds it took.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub kinds: Vec<Kind>,
    pub late: u64,
    pub max_lag_us: u64,
    pub elapsed: f64,
}

/// The histogram bucket of a value in microseconds (`mcpfast.load.hdr.bucket`).
pub fn bucket(micros: u64) -> u32 {
    if micros < SUB_BUCKETS {
        return micros as u32;
    }
    let shift = (64 - micros.leading_zeros()) - BITS;
    (SUB_BUCKETS + u64::from(shift - 1) * HALF + ((micros >> shift) - HALF)) as u32
}

/// When request `n` is due, in seconds from the start (`engine_trio.arrival`).
#[allow(clippy::cast_precision_loss)] // request counts stay far below 2^52
pub fn arrival(mut n: u64, stages: &[(f64, f64)]) -> f64 {
    let mut start = 0.0;
    for &(seconds, rate) in stages {
        let count = seconds * rate;
        if (n as f64) < count {
            return start + n as f64 / rate;
        }
        n -= count as u64;
        start += seconds;
    }
    start + n as f64 / stages[stages.len() - 1].1
}

/// What identical answers share (`engine_trio.answer_key`).
pub fn answer_key(status: u16, content_type: &str, body: &[u8]) -> Key {
    if content_type.starts_with("text/event-stream") {
        let kept: Vec<&[u8]> = body
            .split(|&b| b == b'\n')
            .filter(|line| !line.starts_with(b"id:"))
            .collect();
        return (status, content_type.to_owned(), kept.join(&b'\n'));
    }
    (status, content_type.to_owned(), body.to_vec())
}

/// Why an exchange failed: one of the fixed texts.
struct Failed(&'static str);

fn io_failure(error: &std::io::Error) -> Failed {
    match error.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => Failed(TIMEOUT),
        ErrorKind::UnexpectedEof => Failed(CLOSED),
        _ => Failed(RESET),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A keep-alive connection and what it has read past the last answer.
struct Conn {
    stream: TcpStream,
    buffer: Vec<u8>,
    chunk: Box<[u8]>,
}

impl Conn {
    fn fill(&mut self) -> Result<(), Failed> {
        let read = self
            .stream
            .read(&mut self.chunk)
            .map_err(|e| io_failure(&e))?;
        if read == 0 {
            return Err(Failed(CLOSED));
        }
        self.buffer.extend_from_slice(&self.chunk[..read]);
        Ok(())
    }

    fn until(&mut self, mark: &[u8]) -> Result<usize, Failed> {
        loop {
            if let Some(at) = find(&self.buffer, mark) {
                return Ok(at);
            }
            if self.buffer.len() > HEAD_LIMIT {
                return Err(Failed(NOT_HTTP));
            }
            self.fill()?;
        }
    }

    fn exactly(&mut self, size: usize) -> Result<Vec<u8>, Failed> {
        while self.buffer.len() < size {
            self.fill()?;
        }
        Ok(self.buffer.drain(..size).collect())
    }

    fn chunked(&mut self) -> Result<Vec<u8>, Failed> {
        let mut body = Vec::new();
        loop {
            let end = self.until(b"\r\n")?;
            let line: Vec<u8> = self.buffer.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&line[..end]);
            let size = usize::from_str_radix(text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| Failed(NOT_HTTP))?;
            if size == 0 {
                self.exactly(2)?;
                return Ok(body);
            }
            let mut data = self.exactly(size + 2)?;
            data.truncate(size);
            body.extend_from_slice(&data);
        }
    }

    /// One response: status, content type, body, whether the connection stays open.
    fn answer(&mut self) -> Result<(u16, String, Vec<u8>, bool), Failed> {
        let end = self.until(b"\r\n\r\n")?;
        let head: Vec<u8> = self.buffer.drain(..end + 4).collect();
        let text = String::from_utf8_lossy(&head[..end]).into_owned();
        let mut lines = text.split("\r\n");
        let mut first = lines.next().unwrap_or("").splitn(3, ' ');
        let version = first.next().unwrap_or("");
        let status = first.next().unwrap_or("");
        if !version.starts_with("HTTP/1.") || status.is_empty() {
            return Err(Failed(NOT_HTTP));
        }
        let status: u16 = status.parse().map_err(|_| Failed(NOT_HTTP))?;
        let (mut length, mut chunked, mut content_type, mut keep) = (0usize, false, "", true);
        for line in lines {
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            match name.as_str() {
                "content-length" => length = value.parse().map_err(|_| Failed(NOT_HTTP))?,
                "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
                "content-type" => content_type = value,
                "connection" => keep = !value.eq_ignore_ascii_case("close"),
                _ => {}
            }
        }
        let body = if chunked {
            self.chunked()?
        } else {
            self.exactly(length)?
        };
        Ok((status, content_type.to_owned(), body, keep))
    }
}

fn connect(host: &str, port: u16, timeout: Duration) -> Result<Conn, Failed> {
    let address = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or(Failed(CONNECT))?;
    let stream = TcpStream::connect_timeout(&address, timeout).map_err(|_| Failed(CONNECT))?;
    stream.set_nodelay(true).map_err(|_| Failed(CONNECT))?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|_| Failed(CONNECT))?;
    stream
        .set_write_timeout(Some(timeout))
        .map_err(|_| Failed(CONNECT))?;
    Ok(Conn {
        stream,
        buffer: Vec::new(),
        chunk: vec![0u8; 65536].into_boxed_slice(),
    })
}

/// What every connection thread shares.
struct Shared {
    host: String,
    port: u16,
    connections: u64,
    stages: Vec<(f64, f64)>,
    duration: f64,
    timeout: Duration,
    start: Instant,
}

fn exchange(conn: &mut Option<Conn>, shared: &Shared, request: &[u8]) -> Result<Key, Failed> {
    if conn.is_none() {
        *conn = Some(connect(&shared.host, shared.port, shared.timeout)?);
    }
    let open = conn.as_mut().expect("connected above");
    open.stream.write_all(request).map_err(|e| io_failure(&e))?;
    let (status, content_type, body, keep) = open.answer()?;
    if !keep {
        *conn = None;
    }
    Ok(answer_key(status, &content_type, &body))
}

/// Connection `index`: its requests until the run's end.
fn connection(shared: &Shared, index: u64, cycle: &[Vec<u8>]) -> Tally {
    let mut tally = Tally {
        kinds: vec![Kind::default(); cycle.len()],
        ..Tally::default()
    };
    let mut conn: Option<Conn> = None;
    let mut sent: u64 = 0;
    loop {
        let due = if shared.stages.is_empty() {
            Instant::now()
        } else {
            let at = arrival(index + sent * shared.connections, &shared.stages);
            shared.start + Duration::from_secs_f64(at)
        };
        if due.duration_since(shared.start).as_secs_f64() >= shared.duration {
            break;
        }
        let now = Instant::now();
        if due > now {
            thread::sleep(due - now);
        }
        let kind = (sent % cycle.len() as u64) as usize;
        sent += 1;
        let lag = Instant::now().saturating_duration_since(due).as_micros() as u64;
        if lag > LATE_US {
            tally.late += 1;
            tally.max_lag_us = tally.max_lag_us.max(lag);
        }
        match exchange(&mut conn, shared, &cycle[kind]) {
            Ok(key) => {
                let micros = due.elapsed().as_micros() as u64;
                tally.kinds[kind].answered(key, micros);
            }
            Err(Failed(text)) => {
                tally.kinds[kind].failed(text);
                conn = None;
                if shared.stages.is_empty() {
                    thread::sleep(Duration::from_millis(10)); // a refused connection must not spin
                }
            }
        }
    }
    tally
}

/// Run the load (see `engine_trio.run_load`): one connection per cycle, for `duration`
/// seconds, closed loop (no `stages`) or on their schedule.
///
/// # Panics
///
/// When a connection thread panicked (a bug: they do not).
pub fn run_load(
    host: &str,
    port: u16,
    cycles: Vec<Vec<Vec<u8>>>,
    duration: f64,
    stages: Vec<(f64, f64)>,
    timeout: f64,
) -> Tally {
    let kinds = cycles.first().map_or(0, Vec::len);
    let shared = Arc::new(Shared {
        host: host.to_owned(),
        port,
        connections: cycles.len() as u64,
        stages,
        duration,
        timeout: Duration::from_secs_f64(timeout),
        start: Instant::now(),
    });
    let threads: Vec<_> = cycles
        .into_iter()
        .enumerate()
        .map(|(index, cycle)| {
            let shared = Arc::clone(&shared);
            thread::spawn(move || connection(&shared, index as u64, &cycle))
        })
        .collect();
    let mut total = Tally {
        kinds: vec![Kind::default(); kinds],
        ..Tally::default()
    };
    for handle in threads {
        let tally = handle.join().expect("a connection thread panicked");
        for (mine, theirs) in total.kinds.iter_mut().zip(tally.kinds) {
            mine.merge(theirs);
        }
        total.late += tally.late;
        total.max_lag_us = total.max_lag_us.max(tally.max_lag_us);
    }
    total.elapsed = shared.start.elapsed().as_secs_f64();
    total
}

#[cfg(feature = "python")]
pub mod py {
    use pyo3::prelude::*;
    use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

    /// `run_load(host, port, cycles, duration, stages, timeout)`: see
    /// `mcpfast.load.engine_trio.run_load`.
    #[pyfunction]
    #[pyo3(name = "run_load")]
    pub fn py_run_load(
        py: Python<'_>,
        host: String,
        port: u16,
        cycles: Vec<Vec<Vec<u8>>>,
        duration: f64,
        stages: Vec<(f64, f64)>,
        timeout: f64,
    ) -> PyResult<Bound<'_, PyTuple>> {
        if cycles.is_empty()
            || cycles
                .iter()
                .any(|c| c.len() != cycles[0].len() || c.is_empty())
        {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "cycles must be non-empty and of one length",
            ));
        }
        let tally = py.detach(|| super::run_load(&host, port, cycles, duration, stages, timeout));
        let kinds = PyList::empty(py);
        for kind in tally.kinds {
            let answers = PyDict::new(py);
            for ((status, content_type, body), count) in kind.answers {
                let key = (status, content_type, PyBytes::new(py, &body));
                answers.set_item(key, count)?;
            }
            let counts = PyDict::new(py);
            for (index, count) in kind.counts {
                counts.set_item(index, count)?;
            }
            let errors = PyDict::new(py);
            for (text, count) in kind.errors {
                errors.set_item(text, count)?;
            }
            kinds.append((answers, counts, kind.sum_us, kind.max_us, errors))?;
        }
        (kinds, tally.late, tally.max_lag_us, tally.elapsed).into_pyobject(py)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_within_a_thousandth() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(2047), 2047);
        assert_eq!(bucket(2048), 2048);
        assert_eq!(bucket(4095), 3071);
        assert_eq!(bucket(4096), 3072);
        let mut previous = 0;
        for value in (0..5_000_000).step_by(37) {
            let index = bucket(value);
            assert!(index >= previous);
            previous = index;
        }
    }

    #[test]
    fn the_schedule_follows_the_stages() {
        let stages = [(1.0, 10.0), (1.0, 100.0)];
        assert!((arrival(0, &stages) - 0.0).abs() < 1e-9);
        assert!((arrival(5, &stages) - 0.5).abs() < 1e-9);
        assert!((arrival(10, &stages) - 1.0).abs() < 1e-9);
        assert!((arrival(60, &stages) - 1.5).abs() < 1e-9);
        assert!((arrival(210, &stages) - 3.0).abs() < 1e-9);
    }

    #[test]
    fn sse_event_ids_do_not_split_answers() {
        let a = answer_key(200, "text/event-stream", b"id: 1\ndata: {}\n\n");
        let b = answer_key(200, "text/event-stream", b"id: 2\ndata: {}\n\n");
        assert_eq!(a, b);
        assert_ne!(
            answer_key(200, "application/json", b"id: 1"),
            answer_key(200, "application/json", b"id: 2")
        );
    }
}
