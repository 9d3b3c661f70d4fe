//! The fast load engine of `mcpfast load --engine fast` (`run_load`): a thread per core (of
//! those the process may run on), each driving its share of the keep-alive connections with
//! `poll(2)`, prebuilt HTTP/1.1 requests, no Python while it runs (the GIL released). `mcpfast.load.engine_trio` is its twin and specification: the same
//! schedule (`arrival`), histogram buckets (`bucket`, `mcpfast.load.hdr.bucket`), answer keys
//! (`answer_key`) and failure texts, so the two tallies of one run against one server agree.
//!
//! Answers are not judged here: identical ones are counted together, at most `DISTINCT` per
//! request kind, and judged once each in Python (`mcpfast.load.wire.judge`).
//!
//! While the threads run, the calling thread wakes once a second and hands `tick` the run's
//! numbers so far (`Live`, summed from each thread's `Gauge`: single-writer relaxed atomics, a
//! load and a store per number on the hot path); `tick` returning true stops the run (every
//! thread sees `Shared::stop` within one `poll` wait) and the tally so far is returned.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
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
const MAX_WAIT: Duration = Duration::from_millis(10);
const TICK: Duration = Duration::from_secs(1);

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

/// A thread's running numbers, read by the calling thread once a second: each written by its
/// thread only (a relaxed load and store, no read-modify-write), so reading never slows it.
struct Gauge {
    failed: AtomicU64,
    sum_us: AtomicU64,
    max_us: AtomicU64,
    /// Answered requests per latency bucket, the last one holding every larger value.
    buckets: Vec<AtomicU64>,
}

fn bump(cell: &AtomicU64, by: u64) {
    cell.store(cell.load(Ordering::Relaxed) + by, Ordering::Relaxed);
}

impl Gauge {
    /// Buckets for latencies up to twice `timeout` and a second (an answer is read at most a
    /// `poll` wait after its timeout).
    fn new(timeout: Duration) -> Self {
        let top = bucket(2 * timeout.as_micros() as u64 + 1_000_000);
        Gauge {
            failed: AtomicU64::new(0),
            sum_us: AtomicU64::new(0),
            max_us: AtomicU64::new(0),
            buckets: (0..=top).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn answered(&self, micros: u64) {
        let index = (bucket(micros) as usize).min(self.buckets.len() - 1);
        bump(&self.buckets[index], 1);
        bump(&self.sum_us, micros);
        if micros > self.max_us.load(Ordering::Relaxed) {
            self.max_us.store(micros, Ordering::Relaxed);
        }
    }
}

/// The run's numbers so far, every request kind together: requests failed without an answer,
/// answered requests per latency bucket (only non-empty ones; their sum is the requests
/// answered), and the answered requests' latency sum and maximum in microseconds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Live {
    pub failed: u64,
    pub counts: Vec<(u32, u64)>,
    pub sum_us: u64,
    pub max_us: u64,
}

impl Live {
    /// Requests answered so far.
    pub fn answered(&self) -> u64 {
        self.counts.iter().map(|&(_, c)| c).sum()
    }

    fn of(gauges: &[Gauge]) -> Self {
        let mut live = Live::default();
        for gauge in gauges {
            live.failed += gauge.failed.load(Ordering::Relaxed);
            live.sum_us += gauge.sum_us.load(Ordering::Relaxed);
            live.max_us = live.max_us.max(gauge.max_us.load(Ordering::Relaxed));
        }
        let size = gauges.first().map_or(0, |g| g.buckets.len());
        for index in 0..size {
            let count: u64 = gauges
                .iter()
                .map(|g| g.buckets[index].load(Ordering::Relaxed))
                .sum();
            if count > 0 {
                live.counts.push((index as u32, count));
            }
        }
        live
    }
}

/// A thread's tally and its gauge: every outcome is booked in both, here only.
struct Books<'a> {
    tally: Tally,
    gauge: &'a Gauge,
}

impl Books<'_> {
    fn answered(&mut self, kind: usize, key: Key, micros: u64) {
        self.tally.kinds[kind].answered(key, micros);
        self.gauge.answered(micros);
    }

    fn failed(&mut self, kind: usize, text: &str) {
        self.tally.kinds[kind].failed(text);
        bump(&self.gauge.failed, 1);
    }
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

/// A complete response: status, content type, body, whether the connection stays open, and
/// how many bytes of the buffer it took.
struct Parsed {
    status: u16,
    content_type: String,
    body: Vec<u8>,
    keep: bool,
    used: usize,
}

/// The chunked body starting at `buffer[at..]`: the body and where it ends (None: not all in).
fn dechunk(buffer: &[u8], mut at: usize) -> Result<Option<(Vec<u8>, usize)>, Failed> {
    let mut body = Vec::new();
    loop {
        let Some(end) = find(&buffer[at..], b"\r\n") else {
            return Ok(None);
        };
        let line = String::from_utf8_lossy(&buffer[at..at + end]);
        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| Failed(NOT_HTTP))?;
        at += end + 2;
        if buffer.len() < at + size + 2 {
            return Ok(None);
        }
        if size == 0 {
            return Ok(Some((body, at + 2))); // no trailers: the last CRLF
        }
        body.extend_from_slice(&buffer[at..at + size]);
        at += size + 2;
    }
}

/// The first response in `buffer` (None: not all of it has arrived).
fn parse_response(buffer: &[u8]) -> Result<Option<Parsed>, Failed> {
    let Some(end) = find(buffer, b"\r\n\r\n") else {
        return if buffer.len() > HEAD_LIMIT {
            Err(Failed(NOT_HTTP))
        } else {
            Ok(None)
        };
    };
    let text = String::from_utf8_lossy(&buffer[..end]);
    let mut lines = text.split("\r\n");
    let mut first = lines.next().unwrap_or("").splitn(3, ' ');
    let version = first.next().unwrap_or("");
    let status: u16 = first
        .next()
        .unwrap_or("")
        .parse()
        .map_err(|_| Failed(NOT_HTTP))?;
    if !version.starts_with("HTTP/1.") {
        return Err(Failed(NOT_HTTP));
    }
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
    let start = end + 4;
    let found = if chunked {
        dechunk(buffer, start)?
    } else if buffer.len() >= start + length {
        Some((buffer[start..start + length].to_vec(), start + length))
    } else {
        None
    };
    Ok(found.map(|(body, used)| Parsed {
        status,
        content_type: content_type.to_owned(),
        body,
        keep,
        used,
    }))
}

fn connect(host: &str, port: u16, timeout: Duration) -> Result<TcpStream, Failed> {
    let address = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or(Failed(CONNECT))?;
    let stream = TcpStream::connect_timeout(&address, timeout).map_err(|_| Failed(CONNECT))?;
    stream.set_nodelay(true).map_err(|_| Failed(CONNECT))?;
    stream.set_nonblocking(true).map_err(|_| Failed(CONNECT))?;
    Ok(stream)
}

/// What every connection shares.
struct Shared {
    host: String,
    port: u16,
    connections: u64,
    stages: Vec<(f64, f64)>,
    duration: f64,
    timeout: Duration,
    start: Instant,
    /// Set when the run is stopped early: every thread ends at its next turn.
    stop: AtomicBool,
}

/// One connection of the run: its requests, its socket, and the request under way.
struct Conn<'a> {
    index: u64,
    cycle: &'a [Vec<u8>],
    stream: Option<TcpStream>,
    buffer: Vec<u8>,
    sent: u64,
    /// The request under way: its kind, when it was due, how much of it is written.
    flight: Option<(usize, Instant, usize)>,
    done: bool,
}

impl Conn<'_> {
    /// When its next request is due (None: the run is over for it).
    fn due(&self, shared: &Shared, now: Instant) -> Option<Instant> {
        let due = if shared.stages.is_empty() {
            now
        } else {
            let at = arrival(self.index + self.sent * shared.connections, &shared.stages);
            shared.start + Duration::from_secs_f64(at)
        };
        (due.duration_since(shared.start).as_secs_f64() < shared.duration).then_some(due)
    }

    /// Send the request due at `due`: connected first when it is not.
    fn begin(&mut self, shared: &Shared, due: Instant, tally: &mut Tally) -> Result<(), Failed> {
        let kind = (self.sent % self.cycle.len() as u64) as usize;
        self.sent += 1;
        let lag = Instant::now().saturating_duration_since(due).as_micros() as u64;
        if lag > LATE_US {
            tally.late += 1;
            tally.max_lag_us = tally.max_lag_us.max(lag);
        }
        self.flight = Some((kind, due, 0));
        if self.stream.is_none() {
            self.stream = Some(connect(&shared.host, shared.port, shared.timeout)?);
            self.buffer.clear();
        }
        self.write()
    }

    /// Write what the socket takes of the request under way.
    fn write(&mut self) -> Result<(), Failed> {
        let (kind, due, mut written) = self.flight.expect("a request under way");
        let request = &self.cycle[kind];
        let stream = self.stream.as_mut().expect("connected");
        while written < request.len() {
            match stream.write(&request[written..]) {
                Ok(0) => return Err(Failed(CLOSED)),
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(io_failure(&e)),
            }
        }
        self.flight = Some((kind, due, written));
        Ok(())
    }

    /// Read what has arrived; the answer once it is whole. A server may send its last answer
    /// (``Connection: close``) and close at once: the end read after it is no failure.
    fn read(&mut self, chunk: &mut [u8]) -> Result<Option<(usize, Instant, Key)>, Failed> {
        let stream = self.stream.as_mut().expect("connected");
        let mut ended = false;
        loop {
            match stream.read(chunk) {
                Ok(0) => {
                    ended = true;
                    break;
                }
                Ok(n) => self.buffer.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(io_failure(&e)),
            }
        }
        let Some(parsed) = parse_response(&self.buffer)? else {
            return if ended { Err(Failed(CLOSED)) } else { Ok(None) };
        };
        self.buffer.drain(..parsed.used);
        if !parsed.keep || ended {
            self.stream = None;
        }
        let (kind, due, _) = self.flight.take().expect("a request under way");
        let key = answer_key(parsed.status, &parsed.content_type, &parsed.body);
        Ok(Some((kind, due, key)))
    }

    fn failed(&mut self, text: &str, books: &mut Books<'_>) {
        if let Some((kind, _, _)) = self.flight.take() {
            books.failed(kind, text);
        }
        self.stream = None;
    }
}

/// One thread's connections, driven by `poll(2)` until each has sent its last request or the
/// run is stopped (the requests under way then left out).
fn drive(shared: &Shared, conns: &mut [Conn<'_>], kinds: usize, gauge: &Gauge) -> Tally {
    let mut books = Books {
        tally: Tally {
            kinds: vec![Kind::default(); kinds],
            ..Tally::default()
        },
        gauge,
    };
    let mut chunk = vec![0u8; 65536];
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(conns.len());
    let mut polled: Vec<usize> = Vec::with_capacity(conns.len());
    while !shared.stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        for conn in conns.iter_mut().filter(|c| !c.done && c.flight.is_none()) {
            match conn.due(shared, now) {
                None => conn.done = true,
                Some(due) if due <= now => {
                    if let Err(Failed(text)) = conn.begin(shared, due, &mut books.tally) {
                        conn.failed(text, &mut books);
                        if shared.stages.is_empty() {
                            thread::sleep(Duration::from_millis(10)); // no spinning on a refusal
                        }
                    }
                }
                Some(due) => next = Some(next.map_or(due, |n| n.min(due))),
            }
        }
        fds.clear();
        polled.clear();
        for (i, conn) in conns.iter().enumerate() {
            if let (Some((kind, due, written)), Some(stream)) = (conn.flight, &conn.stream) {
                if now.saturating_duration_since(due) > shared.timeout {
                    continue; // failed below
                }
                let events = if written < conn.cycle[kind].len() {
                    libc::POLLOUT
                } else {
                    libc::POLLIN
                };
                fds.push(libc::pollfd {
                    fd: stream.as_raw_fd(),
                    events,
                    revents: 0,
                });
                polled.push(i);
            }
        }
        for conn in conns.iter_mut() {
            if conn
                .flight
                .is_some_and(|(_, due, _)| now.saturating_duration_since(due) > shared.timeout)
            {
                conn.failed(TIMEOUT, &mut books);
            }
        }
        if conns.iter().all(|c| c.done) {
            break;
        }
        let wait = next
            .map_or(MAX_WAIT, |n| n.saturating_duration_since(now))
            .min(MAX_WAIT);
        if fds.is_empty() {
            thread::sleep(wait);
            continue;
        }
        let millis = wait.as_millis() as i32; // below 1 ms: 0, a due request is near
                                              // SAFETY: `fds` is a valid, initialised array of `fds.len()` pollfd structs.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, millis) };
        if ready <= 0 {
            continue;
        }
        for (fd, &i) in fds.iter().zip(&polled) {
            if fd.revents == 0 {
                continue;
            }
            let conn = &mut conns[i];
            let outcome = if fd.events == libc::POLLOUT {
                conn.write().map(|()| None)
            } else {
                conn.read(&mut chunk)
            };
            match outcome {
                Ok(Some((kind, due, key))) => {
                    books.answered(kind, key, due.elapsed().as_micros() as u64);
                }
                Ok(None) => {}
                Err(Failed(text)) => conn.failed(text, &mut books),
            }
        }
    }
    books.tally
}

/// What a run is asked to do (`run_load`'s arguments but the cycles).
pub struct Load<'a> {
    pub host: &'a str,
    pub port: u16,
    pub duration: f64,
    pub stages: Vec<(f64, f64)>,
    pub timeout: f64,
}

/// Run the load (see `engine_trio.run_load`): one connection per cycle, for `duration`
/// seconds, closed loop (no `stages`) or on their schedule. `tick` is called on this thread
/// about once a second (at each whole second of the run) with the numbers so far; when it
/// returns true, the run stops early and the tally so far is returned.
///
/// # Panics
///
/// When a load thread panicked (a bug: they do not).
pub fn run_load(
    load: Load<'_>,
    cycles: &[Vec<Vec<u8>>],
    tick: &mut dyn FnMut(&Live) -> bool,
) -> Tally {
    let kinds = cycles.first().map_or(0, Vec::len);
    let shared = Shared {
        host: load.host.to_owned(),
        port: load.port,
        connections: cycles.len() as u64,
        stages: load.stages,
        duration: load.duration,
        timeout: Duration::from_secs_f64(load.timeout),
        start: Instant::now(),
        stop: AtomicBool::new(false),
    };
    let threads = thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(cycles.len().max(1));
    let gauges: Vec<Gauge> = (0..threads).map(|_| Gauge::new(shared.timeout)).collect();
    let mut total = Tally {
        kinds: vec![Kind::default(); kinds],
        ..Tally::default()
    };
    let (sender, tallies) = mpsc::channel();
    thread::scope(|scope| {
        for (t, gauge) in gauges.iter().enumerate() {
            let (shared, sender) = (&shared, sender.clone());
            scope.spawn(move || {
                let mut conns: Vec<Conn<'_>> = (t..cycles.len())
                    .step_by(threads)
                    .map(|index| Conn {
                        index: index as u64,
                        cycle: &cycles[index],
                        stream: None,
                        buffer: Vec::new(),
                        sent: 0,
                        flight: None,
                        done: false,
                    })
                    .collect();
                // the receiver outlives the scope: sending cannot fail
                let _ = sender.send(drive(shared, &mut conns, kinds, gauge));
            });
        }
        drop(sender);
        let mut next = shared.start + TICK;
        let mut left = threads;
        while left > 0 {
            match tallies.recv_timeout(next.saturating_duration_since(Instant::now())) {
                Ok(tally) => {
                    total.add(tally);
                    left -= 1;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    next += TICK;
                    if !shared.stop.load(Ordering::Relaxed) && tick(&Live::of(&gauges)) {
                        shared.stop.store(true, Ordering::Relaxed);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break, // a thread panicked
            }
        }
    });
    total.elapsed = shared.start.elapsed().as_secs_f64();
    total
}

impl Tally {
    fn add(&mut self, other: Tally) {
        for (mine, theirs) in self.kinds.iter_mut().zip(other.kinds) {
            mine.merge(theirs);
        }
        self.late += other.late;
        self.max_lag_us = self.max_lag_us.max(other.max_lag_us);
    }
}

#[cfg(feature = "python")]
pub mod py {
    use pyo3::prelude::*;
    use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

    /// `run_load(host, port, cycles, duration, stages, timeout, progress=None)`: see
    /// `mcpfast.load.engine_trio.run_load`. Once a second the GIL is taken back briefly: signal
    /// handlers run (`check_signals`), then `progress`; an exception from either stops the run
    /// and is raised.
    #[pyfunction]
    #[pyo3(name = "run_load", signature = (host, port, cycles, duration, stages, timeout, progress=None))]
    #[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)] // Python's signature
    pub fn py_run_load(
        py: Python<'_>,
        host: String,
        port: u16,
        cycles: Vec<Vec<Vec<u8>>>,
        duration: f64,
        stages: Vec<(f64, f64)>,
        timeout: f64,
        progress: Option<Py<PyAny>>,
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
        let mut raised: Option<PyErr> = None;
        let mut tick = |live: &super::Live| -> bool {
            Python::attach(|py| match report(py, progress.as_ref(), live) {
                Ok(stop) => stop,
                Err(error) => {
                    raised = Some(error);
                    true
                }
            })
        };
        let load = super::Load {
            host: &host,
            port,
            duration,
            stages,
            timeout,
        };
        let tally = py.detach(|| super::run_load(load, &cycles, &mut tick));
        if let Some(error) = raised {
            return Err(error);
        }
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

    /// Run the signal handlers, then `progress(answered, failed, counts, sum_us, max_us)`:
    /// whether it asked to stop (a true result).
    fn report(py: Python<'_>, progress: Option<&Py<PyAny>>, live: &super::Live) -> PyResult<bool> {
        py.check_signals()?;
        let Some(progress) = progress else {
            return Ok(false);
        };
        let counts = PyDict::new(py);
        for &(index, count) in &live.counts {
            counts.set_item(index, count)?;
        }
        let args = (
            live.answered(),
            live.failed,
            counts,
            live.sum_us,
            live.max_us,
        );
        progress.bind(py).call1(args)?.is_truthy()
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

    /// A server on loopback answering every request it reads with `{}`, until the test ends.
    fn answering_server() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                thread::spawn(move || {
                    let mut stream = stream;
                    let mut chunk = [0u8; 4096];
                    while let Ok(n) = stream.read(&mut chunk) {
                        let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
                        if n == 0 || stream.write_all(answer).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        port
    }

    #[test]
    fn a_tick_sees_the_run_so_far_and_can_stop_it() {
        let port = answering_server();
        let request = b"POST / HTTP/1.1\r\ncontent-length: 0\r\n\r\n".to_vec();
        let load = Load {
            host: "127.0.0.1",
            port,
            duration: 60.0,
            stages: Vec::new(),
            timeout: 5.0,
        };
        let mut seen = Vec::new();
        let tally = run_load(load, &[vec![request.clone()], vec![request]], &mut |live| {
            seen.push(live.clone());
            true
        });
        assert_eq!(seen.len(), 1);
        assert!(
            tally.elapsed < 30.0,
            "stopped at its first second: {}",
            tally.elapsed
        );
        let answered: u64 = tally.kinds[0].answers.values().sum();
        assert!(seen[0].answered() > 0 && seen[0].answered() <= answered);
        assert_eq!(seen[0].failed, 0);
        assert!(seen[0].max_us > 0 && seen[0].sum_us >= seen[0].max_us);
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
