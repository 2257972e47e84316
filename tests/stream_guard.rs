//! The Rust services' stream guard: the stream transcripts of tests/fixtures/llm (read with
//! Node), served as server-sent events by a fake provider on 127.0.0.1, through a real reqwest
//! client, both under the reqwest middleware and under the tower layer (a `service_fn` calling
//! the provider). Each streamed answer is counted by how its body ends, not when its head
//! arrives: what the breaker counted, the bytes the reader got (the provider's, unchanged), and
//! how the body ended.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Response, StatusCode};
use axum::Router;
use breakwater::reqwest::BreakerMiddleware;
use breakwater::stream::{Limit, Stop, StreamLimits};
use breakwater::tower::BreakerLayer;
use breakwater::{
    BodyError, BreakerConfig, CircuitBreaker, Outcome, Stats, StreamCut, SystemClock, TripRule,
};
use bytes::Bytes;
use http_body::Body as _;
use serde_json::Value;
use tokio::net::TcpListener;

#[path = "common/llm.rs"]
mod llm;
use tower::{ServiceBuilder, ServiceExt};

// --- The transcripts ---

/// One item of a stream transcript.
#[derive(Clone, Debug)]
enum Item {
    Event { event: Option<String>, data: String },
    Comment(String),
    Delay(u64),
}

impl Item {
    /// The item on the wire, as tests/js/fake-provider.mjs writes it: the `event:` line when
    /// there is one, a `data:` line per line of data, a blank line; a comment as a `:` line and a
    /// blank line.
    fn wire(&self) -> Option<String> {
        match self {
            Item::Event { event, data } => {
                let mut out = String::new();
                if let Some(e) = event {
                    out += &format!("event: {e}\n");
                }
                for line in data.split('\n') {
                    out += &format!("data: {line}\n");
                }
                Some(out + "\n")
            }
            Item::Comment(c) => Some(format!(":{c}\n\n")),
            Item::Delay(_) => None,
        }
    }
}

/// A stream transcript of the corpus.
#[derive(Clone, Debug)]
struct Transcript {
    name: String,
    status: u16,
    headers: Vec<(String, String)>,
    events: Vec<Item>,
    /// The connection is aborted after the last event.
    cut: bool,
    /// The outcome the corpus documents for it (tests/fixtures/llm/index.mjs `documented`),
    /// when it has an `expect`.
    documented: Option<Outcome>,
    /// After the events, this one again and again until the reader is gone.
    endless: Option<Item>,
}

impl Transcript {
    /// Every byte the provider sends.
    fn bytes(&self) -> Vec<u8> {
        self.events
            .iter()
            .filter_map(Item::wire)
            .collect::<String>()
            .into_bytes()
    }

    /// The same answer with `ms` of silence before every event.
    fn paced(mut self, ms: u64) -> Self {
        self.events = self
            .events
            .into_iter()
            .flat_map(|e| [Item::Delay(ms), e])
            .collect();
        self
    }
}

/// Every stream transcript of tests/fixtures/llm.
fn corpus() -> Vec<Transcript> {
    llm::corpus()
        .iter()
        .filter(|t| t.get("events").is_some())
        .map(|t| {
            let events = t["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    if let Some(ms) = e.get("delayMs") {
                        Item::Delay(ms.as_u64().unwrap())
                    } else if let Some(c) = e.get("comment") {
                        Item::Comment(c.as_str().unwrap().to_string())
                    } else {
                        Item::Event {
                            event: e.get("event").and_then(Value::as_str).map(String::from),
                            data: e["data"].as_str().unwrap().to_string(),
                        }
                    }
                })
                .collect();
            Transcript {
                name: t["name"].as_str().unwrap().to_string(),
                status: t["status"].as_u64().unwrap() as u16,
                headers: t["headers"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                    .collect(),
                events,
                cut: t["cut"].as_bool() == Some(true),
                documented: match t["documented"].as_str() {
                    Some("fail" | "cut") => Some(Outcome::Failure),
                    Some("ignored") => Some(Outcome::Ignored),
                    Some("success") => Some(Outcome::Success),
                    _ => None,
                },
                endless: None,
            }
        })
        .collect()
}

fn find(corpus: &[Transcript], name: &str) -> Transcript {
    corpus
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} is in the corpus"))
        .clone()
}

// --- The fake provider ---

/// A provider that replays its cued transcripts as server-sent events, one per request,
/// counting the bytes its answers gave to the server to send.
#[derive(Clone, Default)]
struct Provider {
    cued: Arc<Mutex<VecDeque<Transcript>>>,
    sent: Arc<AtomicUsize>,
}

impl Provider {
    fn cue(&self, t: Transcript) {
        self.cued.lock().unwrap().push_back(t);
    }

    fn router(&self) -> Router {
        let me = self.clone();
        Router::new().fallback(move || {
            let t = me.cued.lock().unwrap().pop_front().expect("a cued answer");
            let sent = Arc::clone(&me.sent);
            async move {
                // One event in the channel at a time: the server takes the next only when it
                // can write it.
                let (tx, rx) = tokio::sync::mpsc::channel(1);
                let mut response = Response::new(Body::new(ChannelBody(rx)));
                *response.status_mut() = StatusCode::from_u16(t.status).unwrap();
                for (k, v) in &t.headers {
                    response.headers_mut().insert(
                        HeaderName::from_bytes(k.as_bytes()).unwrap(),
                        HeaderValue::from_str(v).unwrap(),
                    );
                }
                tokio::spawn(replay(t, tx, sent));
                response
            }
        })
    }

    async fn serve(&self) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = self.router();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        addr
    }
}

type Frame = Result<Bytes, std::io::Error>;

/// Sends the transcript's events with their pauses; a cut aborts the connection.
async fn replay(t: Transcript, tx: tokio::sync::mpsc::Sender<Frame>, sent: Arc<AtomicUsize>) {
    let endless = t.endless.clone().into_iter().cycle();
    for item in t.events.iter().cloned().chain(endless) {
        let Some(wire) = item.wire() else {
            if let Item::Delay(ms) = item {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            continue;
        };
        let n = wire.len();
        if tx.send(Ok(Bytes::from(wire))).await.is_err() {
            return;
        }
        sent.fetch_add(n, Ordering::SeqCst);
    }
    if t.cut {
        // What was sent goes out first.
        tokio::time::sleep(Duration::from_millis(30)).await;
        let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut");
        let _ = tx.send(Err(reset)).await;
    }
}

/// A response body fed by a channel.
struct ChannelBody(tokio::sync::mpsc::Receiver<Frame>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|o| o.map(|r| r.map(http_body::Frame::data)))
    }
}

// --- The two services, read to their end ---

#[derive(Clone, Copy, Debug, PartialEq)]
enum Via {
    Middleware,
    Layer,
}

/// How a body ended.
#[derive(Clone, Debug, PartialEq)]
enum End {
    /// With its last byte.
    Clean,
    /// With the stream guard's cut.
    Cut(StreamCut),
    /// With the connection's own error.
    Broken,
}

/// What a reader got, and what the breaker counted.
#[derive(Debug)]
struct Read {
    bytes: Vec<u8>,
    end: End,
    counted: Option<Outcome>,
    stats: Stats,
}

/// The breaker of one run: it never opens.
fn breaker() -> Arc<CircuitBreaker<SystemClock>> {
    let config = BreakerConfig::new().with_trip(TripRule::ConsecutiveFailures { threshold: 1000 });
    Arc::new(CircuitBreaker::new("provider", config, SystemClock).unwrap())
}

fn sleep(ms: u64) -> tokio::time::Sleep {
    tokio::time::sleep(Duration::from_millis(ms))
}

/// The one outcome the breaker counted, if it counted one.
fn counted(stats: &Stats) -> Option<Outcome> {
    match (stats.successes, stats.failures, stats.ignored) {
        (1, 0, 0) => Some(Outcome::Success),
        (0, 1, 0) => Some(Outcome::Failure),
        (0, 0, 1) => Some(Outcome::Ignored),
        (0, 0, 0) => None,
        _ => panic!("counted more than once: {stats:?}"),
    }
}

/// A guarded body of either service, read chunk by chunk.
enum Reader {
    Middleware(reqwest::Response),
    Layer(breakwater::GuardedBody<reqwest::Body, SystemClock>),
}

impl Reader {
    async fn chunk(&mut self) -> Result<Option<Bytes>, End> {
        match self {
            Reader::Middleware(r) => r.chunk().await.map_err(|e| {
                // reqwest wraps the body's error in its own.
                match StreamCut::find(&e) {
                    Some(cut) => End::Cut(cut),
                    None => End::Broken,
                }
            }),
            Reader::Layer(body) => loop {
                let frame = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await;
                match frame {
                    None => return Ok(None),
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => return Ok(Some(data)),
                        Err(_) => continue,
                    },
                    Some(Err(BodyError::Cut(cut))) => return Err(End::Cut(cut)),
                    Some(Err(BodyError::Inner(_))) => return Err(End::Broken),
                }
            },
        }
    }
}

/// Sends one request through the service `via` with `limits`, and hands the reader over at the
/// head (the breaker with it).
async fn open(
    via: Via,
    url: &str,
    limits: Option<StreamLimits>,
) -> (Reader, Arc<CircuitBreaker<SystemClock>>) {
    let b = breaker();
    let reader = match via {
        Via::Middleware => {
            let mut middleware = BreakerMiddleware::new(Arc::clone(&b));
            if let Some(limits) = limits {
                middleware = middleware.with_stream_limits(limits, sleep);
            }
            let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
                .with(middleware)
                .build();
            let response = client.post(url).send().await.unwrap();
            assert_eq!(response.url().as_str(), url, "the response keeps its URL");
            Reader::Middleware(response)
        }
        Via::Layer => {
            let mut layer = BreakerLayer::new(Arc::clone(&b));
            if let Some(limits) = limits {
                layer = layer.with_stream_limits(limits, sleep);
            }
            let http = reqwest::Client::new();
            let url = url.to_string();
            let provider = tower::service_fn(move |_: ()| {
                let send = http.post(&url).send();
                async move { send.await.map(Response::<reqwest::Body>::from) }
            });
            let response = ServiceBuilder::new()
                .layer(layer)
                .service(provider)
                .oneshot(())
                .await
                .unwrap();
            Reader::Layer(response.into_body())
        }
    };
    (reader, b)
}

/// A reader that reads as soon as it can.
fn eager(_: &[u8]) -> u64 {
    0
}

/// Cues `t`, sends one request through `via` and reads the body to its end, away for
/// `away(what it read so far)` ms before each read.
async fn replay_through(
    via: Via,
    provider: &Provider,
    url: &str,
    t: &Transcript,
    limits: Option<StreamLimits>,
    away: &dyn Fn(&[u8]) -> u64,
) -> Read {
    provider.cue(t.clone());
    let (mut reader, b) = open(via, url, limits).await;
    assert_eq!(
        counted(&b.stats()),
        None,
        "{}: a streamed answer is not counted at its head",
        t.name
    );
    let mut bytes = Vec::new();
    let end = loop {
        let ms = away(&bytes);
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        match reader.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(None) => break End::Clean,
            Err(end) => break end,
        }
    };
    let stats = b.stats();
    Read {
        bytes,
        end,
        counted: counted(&stats),
        stats,
    }
}

const BOTH: [Via; 2] = [Via::Middleware, Via::Layer];

/// How a body is to end, in the table below.
#[derive(Clone, Copy, Debug)]
enum Ends {
    Clean,
    /// The guard's cut, before the answer began (`false`) or after.
    Cut(bool),
    Broken,
}

fn ends_as(end: &End, want: Ends) -> bool {
    match (end, want) {
        (End::Clean, Ends::Clean) | (End::Broken, Ends::Broken) => true,
        (End::Cut(cut), Ends::Cut(began)) => cut.began == began && cut.counted,
        _ => false,
    }
}

// --- The tests ---

/// Each named transcript, and every one whose `expect` says what it is, through both services:
/// the breaker counted what the stream was (an answer cut mid-way, an error event in a 200, an
/// ending that declined), once; the reader got the provider's bytes unchanged (all of them,
/// unless the guard stopped the stream at an error); and the body ended as the guard decided.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_corpus_streams_are_counted_by_how_they_end() {
    use Outcome::{Failure, Ignored, Success};
    let table: &[(&str, Outcome, Ends)] = &[
        ("anthropicText", Success, Ends::Clean),
        ("anthropicOverloadedBeforeText", Failure, Ends::Cut(false)),
        ("anthropicOverloadedAfterText", Failure, Ends::Cut(true)),
        ("anthropicRefusal", Ignored, Ends::Clean),
        ("anthropicToolUseCutMidInput", Failure, Ends::Broken),
        ("anthropicPingsDuringStall", Success, Ends::Clean),
        ("openaiChatText", Success, Ends::Clean),
        ("openaiChatErrorChunk", Failure, Ends::Cut(true)),
        ("responsesText", Success, Ends::Clean),
        ("responsesFailed", Failure, Ends::Cut(false)),
        ("geminiText", Success, Ends::Clean),
    ];
    let corpus = corpus();
    let provider = Provider::default();
    let url = format!("http://{}/v1/stream", provider.serve().await);
    let mut wrong = Vec::new();
    let mut checked = 0;
    for t in &corpus {
        let listed = table.iter().find(|e| e.0 == t.name);
        let expected = listed.map(|e| e.1).or(t.documented);
        for via in BOTH {
            let read = replay_through(via, &provider, &url, t, None, &eager).await;
            let sent = t.bytes();
            let stopped = matches!(read.end, End::Cut(_));
            if !(sent.starts_with(&read.bytes) && (stopped || read.bytes == sent)) {
                wrong.push(format!(
                    "{} via {via:?}: the reader got {} of the {} bytes sent, or other bytes",
                    t.name,
                    read.bytes.len(),
                    sent.len()
                ));
            }
            if read.stats.admitted != 1 || read.counted.is_none() {
                wrong.push(format!(
                    "{} via {via:?}: not settled: {:?}",
                    t.name, read.stats
                ));
            }
            if let Some(want) = expected {
                checked += 1;
                if read.counted != Some(want) {
                    wrong.push(format!(
                        "{} via {via:?}: counted {:?}, not {want:?} (the body ended {:?})",
                        t.name, read.counted, read.end
                    ));
                }
            }
            if let Some(&(_, _, ends)) = listed {
                if !ends_as(&read.end, ends) {
                    wrong.push(format!(
                        "{} via {via:?}: the body ended {:?}, not {ends:?}",
                        t.name, read.end
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert!(checked >= table.len() * 2, "{checked} outcomes checked");
    eprintln!(
        "{} stream transcripts, {checked} outcomes checked ({} by their `expect`)",
        corpus.len(),
        checked / 2 - table.len()
    );
}

/// An in-band error's cut carries what the provider said: Anthropic's `overloaded_error`
/// stands for a 529, and the cut is found in reqwest's error by [`StreamCut::find`].
#[tokio::test]
async fn an_error_event_in_a_200_fails_the_attempt_with_its_status() {
    let corpus = corpus();
    let provider = Provider::default();
    let url = format!("http://{}/v1/messages", provider.serve().await);
    for via in BOTH {
        let t = find(&corpus, "anthropicOverloadedBeforeText");
        let read = replay_through(via, &provider, &url, &t, None, &eager).await;
        let End::Cut(cut) = read.end else {
            panic!("{via:?}: {:?}", read.end)
        };
        match cut.stop {
            Stop::Error(Some(e)) => assert_eq!(e.status, 529),
            other => panic!("{via:?}: {other:?}"),
        }
        assert!(!cut.began);
        assert_eq!(read.counted, Some(Outcome::Failure));
    }
}

/// Anthropic's pings keep the connection alive, not the model: with an idle limit shorter than
/// the stall (pings every 50 ms for 400 ms after the first words) the answer is cut by the idle
/// limit and counted as a failure, in both services; with a limit longer than the stall it
/// ends well.
#[tokio::test]
async fn pings_during_a_stall_do_not_keep_the_idle_limit_from_cutting() {
    let corpus = corpus();
    let provider = Provider::default();
    let url = format!("http://{}/v1/messages", provider.serve().await);
    let t = find(&corpus, "anthropicPingsDuringStall");
    let limits = |idle_ms| StreamLimits {
        idle_ms: Some(idle_ms),
        ..StreamLimits::default()
    };
    for via in BOTH {
        let read = replay_through(via, &provider, &url, &t, Some(limits(150)), &eager).await;
        assert_eq!(read.counted, Some(Outcome::Failure), "{via:?}");
        let End::Cut(cut) = read.end else {
            panic!("{via:?}: {:?}", read.end)
        };
        assert_eq!(cut.stop, Stop::Timeout(Limit::Idle), "{via:?}");
        assert!(cut.began && cut.counted, "{via:?}");
        assert!(
            t.bytes().starts_with(&read.bytes) && read.bytes.len() < t.bytes().len(),
            "{via:?}: the words before the stall, and no more"
        );

        let read = replay_through(via, &provider, &url, &t, Some(limits(1_000)), &eager).await;
        assert_eq!(read.counted, Some(Outcome::Success), "{via:?}");
        assert_eq!(read.bytes, t.bytes(), "{via:?}");
    }
}

/// OpenRouter's comments before the first words keep nothing from the first-chunk limit: past
/// it the attempt fails before the answer began.
#[tokio::test]
async fn keep_alive_comments_do_not_count_as_the_first_chunk() {
    let corpus = corpus();
    let provider = Provider::default();
    let url = format!("http://{}/v1/chat/completions", provider.serve().await);
    let t = find(&corpus, "openaiChatOpenRouterKeepAlive");
    let limits = StreamLimits {
        first_ms: Some(150),
        ..StreamLimits::default()
    };
    for via in BOTH {
        let read = replay_through(via, &provider, &url, &t, Some(limits), &eager).await;
        assert_eq!(read.counted, Some(Outcome::Failure), "{via:?}");
        assert_eq!(
            read.end,
            End::Cut(StreamCut {
                stop: Stop::Timeout(Limit::First),
                began: false,
                counted: true
            }),
            "{via:?}"
        );
    }
}

/// A reader ten times slower than the provider (it is away 200 ms before each read; the
/// provider sends an event every 20 ms) under an idle limit of 150 ms, shorter than the reader's
/// absences and longer than the provider's gaps: the time the reader is away is not the model's
/// silence, and the answer is a success, whole. So too when the reader is away for most of a
/// silence longer than the limit (away 200 ms after the first words, the model silent 250 ms):
/// only the 50 ms it waited are the model's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_is_not_taken_for_a_silent_model() {
    let corpus = corpus();
    let provider = Provider::default();
    let url = format!("http://{}/v1/messages", provider.serve().await);
    let limits = StreamLimits {
        idle_ms: Some(150),
        ..StreamLimits::default()
    };
    let slow = find(&corpus, "anthropicText").paced(20);
    let mut stalled = find(&corpus, "anthropicText");
    let hello = stalled
        .events
        .iter()
        .position(|e| matches!(e, Item::Event { data, .. } if data.contains(r#""text":"Hello""#)))
        .unwrap();
    stalled.events.insert(hello + 1, Item::Delay(250));
    let first_words = Transcript {
        events: stalled.events[..=hello].to_vec(),
        ..stalled.clone()
    }
    .bytes();
    let away_after_the_first_words = |read: &[u8]| if read == first_words { 200u64 } else { 0 };
    for via in BOTH {
        for (t, away) in [
            (&slow, &(|_: &[u8]| 200u64) as &dyn Fn(&[u8]) -> u64),
            (&stalled, &away_after_the_first_words),
        ] {
            let read = replay_through(via, &provider, &url, t, Some(limits), away).await;
            assert_eq!(read.end, End::Clean, "{via:?}");
            assert_eq!(read.counted, Some(Outcome::Success), "{via:?}");
            assert_eq!(read.bytes, t.bytes(), "{via:?}");
        }
    }
}

/// A reader that takes the head and never reads the body, under an idle limit: the breaker
/// counts nothing while it holds the body (its silence is not the model's), the provider's
/// endless answer is held back by the connection (the guard reads only what the reader asks
/// for), and dropping the body settles the call as ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_never_reads_is_neither_counted_nor_buffered() {
    const HELD_BACK: usize = 64 << 20;
    let corpus = corpus();
    let mut t = find(&corpus, "anthropicText");
    let delta = |text: &str| Item::Event {
        event: Some("content_block_delta".into()),
        data: serde_json::json!({
            "type": "content_block_delta", "index": 0,
            "delta": { "type": "text_delta", "text": text }
        })
        .to_string(),
    };
    // The head of the answer, then 16 KiB deltas for ever.
    t.events.truncate(3);
    t.endless = Some(delta(&"x".repeat(16 << 10)));
    let limits = StreamLimits {
        idle_ms: Some(50),
        ..StreamLimits::default()
    };
    for via in BOTH {
        let provider = Provider::default();
        let url = format!("http://{}/v1/messages", provider.serve().await);
        provider.cue(t.clone());
        let (reader, b) = open(via, &url, Some(limits)).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let stats = b.stats();
        assert_eq!(counted(&stats), None, "{via:?}: {stats:?}");
        let sent = provider.sent.load(Ordering::SeqCst);
        assert!(
            sent < HELD_BACK,
            "{via:?}: the provider wrote {sent} bytes to a reader that read none"
        );
        drop(reader);
        let stats = b.stats();
        assert_eq!(
            counted(&stats),
            Some(Outcome::Ignored),
            "{via:?}: {stats:?}"
        );
        eprintln!("{via:?}: the provider got {sent} bytes out before the connection held it");
    }
}

/// What is not a streamed answer is counted at its head, as before: a JSON 200 is a success and
/// an event stream with an error status a failure before their bodies are read, and their
/// bodies pass through as they came.
#[tokio::test]
async fn other_answers_are_counted_at_their_head() {
    let corpus = corpus();
    let provider = Provider::default();
    let url = format!("http://{}/v1/messages", provider.serve().await);
    let mut json = find(&corpus, "anthropicText");
    json.headers = vec![("content-type".into(), "application/json".into())];
    let mut failed = find(&corpus, "anthropicText");
    failed.status = 500;
    for via in BOTH {
        for (t, outcome) in [(&json, Outcome::Success), (&failed, Outcome::Failure)] {
            provider.cue(t.clone());
            let (mut reader, b) = open(via, &url, None).await;
            assert_eq!(counted(&b.stats()), Some(outcome), "{via:?}");
            let mut bytes = Vec::new();
            while let Some(chunk) = reader.chunk().await.unwrap() {
                bytes.extend_from_slice(&chunk);
            }
            assert_eq!(bytes, t.bytes(), "{via:?}");
            assert_eq!(b.stats().admitted, 1);
            assert_eq!(counted(&b.stats()), Some(outcome), "{via:?}");
        }
    }
}
