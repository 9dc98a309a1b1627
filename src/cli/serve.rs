//! `serve [--bind ADDR]`: the local dashboard (`view::dashboard`) over HTTP, with the loops'
//! event streams and their feeds (the lines the terminal says, `view::feed`) as server-sent
//! events. Every request, pages and streams as well as pause, resume, stop and the answer to a
//! question an agent asked, needs the token printed at start (`view::access`): the printed URL
//! sets it as an `HttpOnly`, `SameSite=Strict` cookie; scripts may send it in `x-wiggum-token`. Requests whose
//! `Host` or `Origin` is not the bound address are refused. Bound to loopback unless `--bind`
//! says otherwise.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use clap::Args;

use crate::config;
use crate::disk::handle::Handle;
use crate::disk::{registry, runlog};
use crate::error::{Error, Result};
use crate::view::access::{self, Verdict};
use crate::view::dashboard;
use crate::view::model::{self, LoopView, Want};

/// Flags of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen (loopback by default; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8765", value_name = "ADDR")]
    pub bind: std::net::SocketAddr,
    /// Also list the loops whose records are on this git remote's `wiggum/*` branches
    /// (`run-remote`, Kubernetes Jobs), read at each visit of the index.
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
}

struct App {
    token: String,
    addr: std::net::SocketAddr,
    remote: Option<String>,
}

/// A remote run whose heartbeat is older than this shows as `dead` (as in `list`).
const REMOTE_STALE: Duration = Duration::from_secs(90);

/// `serve`: until interrupted.
pub fn run(a: &ServeArgs) -> Result<i32> {
    let token = new_token()?;
    let rt = crate::sys::runtime::runtime()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(a.bind)
            .await
            .map_err(|e| Error::input(format!("--bind {}: {e}", a.bind)))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::runtime(format!("the dashboard's address: {e}")))?;
        // Agent runs never reach the dashboard (their network rules leave its port out).
        crate::agent::sandbox::dashboard::record(&config::home_dir()?, addr.port());
        println!(
            "dashboard: http://{addr}/?token={token}   (open this address: it keeps the token in a cookie)"
        );
        use std::io::Write as _;
        let _flushed = std::io::stdout().flush();
        let app = Arc::new(App {
            token,
            addr,
            remote: a.remote.clone(),
        });
        let routes = Router::new()
            .route("/", get(index))
            .route("/loop/{topic}", get(loop_page))
            .route("/loop/{topic}/diff/{n}", get(diff))
            .route("/loop/{topic}/events", get(event_stream))
            .route("/loop/{topic}/feed", get(feed_stream))
            .route("/loop/{topic}/{action}", post(control))
            .route("/remote/{topic}", get(remote_page))
            .layer(axum::middleware::from_fn_with_state(Arc::clone(&app), guard))
            .with_state(app);
        axum::serve(listener, routes)
            .await
            .map_err(|e| Error::runtime(format!("the dashboard: {e}")))
    })?;
    Ok(0)
}

/// Every request passes here first: answered only at the bound address, from no other site's
/// page, with the token (`view::access`).
async fn guard(
    State(app): State<Arc<App>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let verdict = {
        let h = req.headers();
        let text = |name: &str| h.get(name).and_then(|v| v.to_str().ok());
        let asked = access::Asked {
            host: text("host"),
            origin: text("origin"),
            cookie: text("cookie"),
            header_token: text("x-wiggum-token"),
            query: req.uri().query(),
        };
        access::admit(&asked, app.addr, &app.token)
    };
    match verdict {
        Verdict::Allow => next.run(req).await,
        Verdict::SetCookie => (
            StatusCode::SEE_OTHER,
            [
                (header::LOCATION, req.uri().path().to_string()),
                (header::SET_COOKIE, access::set_cookie(app.addr, &app.token)),
            ],
        )
            .into_response(),
        Verdict::ForeignHost => (
            StatusCode::MISDIRECTED_REQUEST,
            format!("this dashboard answers only at http://{}/", app.addr),
        )
            .into_response(),
        Verdict::ForeignOrigin => (
            StatusCode::FORBIDDEN,
            "requests from another site's page are refused",
        )
            .into_response(),
        Verdict::NoToken => (
            StatusCode::UNAUTHORIZED,
            "open the address `serve` printed: it carries the token",
        )
            .into_response(),
    }
}

fn new_token() -> Result<String> {
    use std::io::Read as _;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::runtime(format!("/dev/urandom: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

fn handle(topic: &str) -> std::result::Result<Handle, (StatusCode, String)> {
    Handle::open(topic).map_err(|e| (StatusCode::NOT_FOUND, e.to_string()))
}

/// Quality and gate before → after, as the index shows them.
type Lifted = Option<(String, String)>;

/// Every local loop with its lift.
fn views() -> Result<Vec<(LoopView, Lifted)>> {
    let home = config::home_dir()?;
    let all = Want {
        recent: usize::MAX,
        ..Want::default()
    };
    registry::all(&home)?
        .into_iter()
        .map(|(t, p)| {
            let h = Handle::at(&home, &t, p);
            let v = model::load(&h, all)?;
            let lift = v.state.as_ref().map(|st| {
                let l = crate::view::summary::lift_of(&h, Some(st), &v.recent);
                crate::view::summary::before_after(&l)
            });
            Ok((v, lift))
        })
        .collect()
}

async fn index(State(app): State<Arc<App>>) -> Response {
    let all = views().and_then(|local| {
        let remote = match &app.remote {
            Some(url) => super::remote::remote_views(url, REMOTE_STALE)?,
            None => Vec::new(),
        };
        Ok((local, remote))
    });
    match all {
        Ok((local, remote)) => {
            let mut rows: Vec<dashboard::Row<'_>> = local
                .iter()
                .map(|(v, lift)| dashboard::Row {
                    view: v,
                    href: format!("/loop/{}", v.topic),
                    lift: lift.clone(),
                })
                .collect();
            rows.extend(remote.iter().map(|v| dashboard::Row {
                view: v,
                href: format!("/remote/{}", v.topic),
                lift: None,
            }));
            Html(dashboard::index(&rows)).into_response()
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// A remote loop's page, from the records its run pushed (read at each visit).
async fn remote_page(State(app): State<Arc<App>>, Path(topic): Path<String>) -> Response {
    let Some(url) = app.remote.clone() else {
        return (StatusCode::NOT_FOUND, "serve was started without --remote").into_response();
    };
    let page = (|| -> Result<Option<String>> {
        let Some(r) = crate::view::remote::remote_records(&url)?
            .into_iter()
            .find(|r| r.topic == topic)
        else {
            return Ok(None);
        };
        let fresh = r
            .state
            .as_ref()
            .is_some_and(|s| s.fresh(chrono::Utc::now(), REMOTE_STALE));
        let runs: Vec<crate::disk::runlog::RunRecord> = r
            .runs
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let v = LoopView::remote(&r.topic, r.state, fresh);
        Ok(Some(dashboard::loop_page(
            &v,
            &runs,
            &[],
            dashboard::Before::default(),
            &dashboard::Source::Remote(url.clone()),
        )))
    })();
    match page {
        Ok(Some(p)) => Html(p).into_response(),
        Ok(None) => (
            StatusCode::NOT_FOUND,
            format!("no records of `{topic}` on {url}"),
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn loop_page(Path(topic): Path<String>) -> Response {
    let h = match handle(&topic) {
        Ok(h) => h,
        Err(r) => return r.into_response(),
    };
    let page = (|| -> Result<String> {
        let v = model::load(&h, Want::default())?;
        let mut runs = Vec::new();
        runlog::for_each(&h.layout.runs(), |r| runs.push(r))?;
        let reviews: Vec<(u32, String)> = runs
            .iter()
            .filter_map(|r| {
                let text = crate::sys::fsutil::read_capped(&h.layout.review(r.iteration), 64 << 10)
                    .ok()?;
                let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
                Some((r.iteration, line.trim_start_matches('#').trim().to_string()))
            })
            .collect();
        let lift = crate::view::summary::lift_of(&h, v.state.as_ref(), &runs);
        let before = dashboard::Before {
            quality: lift.quality.first().and_then(|m| m.before),
            gate: lift.gate_r1,
        };
        Ok(dashboard::loop_page(
            &v,
            &runs,
            &reviews,
            before,
            &dashboard::Source::Local,
        ))
    })();
    match page {
        Ok(p) => Html(p).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn diff(Path((topic, n)): Path<(String, u32)>) -> Response {
    match super::diff::patch_text(&topic, Some(n), false) {
        // An agent's text: shown as text, never sniffed into a page.
        Ok(text) => (
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            text,
        )
            .into_response(),
        Err(e) => (StatusCode::NOT_FOUND, e.to_string()).into_response(),
    }
}

/// The loop's events as server-sent events, as they happen (`events --follow`), ending with
/// the loop.
async fn event_stream(Path(topic): Path<String>) -> Response {
    let mut f = super::events::Follower::default();
    sse(&topic, move |h, live| {
        let evs = f.next(h, live).unwrap_or_default();
        evs.iter()
            .map(|e| serde_json::to_string(e).unwrap_or_default())
            .collect()
    })
}

/// The loop's feed (`view::feed`): the lines its terminal says, as they come, for the page.
async fn feed_stream(Path(topic): Path<String>) -> Response {
    let mut f = super::events::FeedFollower::default();
    sse(&topic, move |h, live| {
        let items = f.next(h, live).unwrap_or_default();
        items
            .iter()
            .map(|i| serde_json::to_string(i).unwrap_or_default())
            .collect()
    })
}

/// A loop's stream as server-sent events: what `next` has each time it is asked (every 300 ms
/// while the loop runs), one `data:` each, ending once the loop has ended.
fn sse<F>(topic: &str, next: F) -> Response
where
    F: FnMut(&Handle, bool) -> Vec<String> + Send + 'static,
{
    let h = match handle(topic) {
        Ok(h) => h,
        Err(r) => return r.into_response(),
    };
    let home = match config::home_dir() {
        Ok(d) => d,
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    };
    let state = (h, home, next, false);
    let stream = futures_util::stream::unfold(state, |(h, home, mut next, done)| async move {
        if done {
            return None;
        }
        loop {
            let live = crate::disk::lock::find(&home, &h.layout)
                .ok()
                .flatten()
                .is_some();
            let datas = next(&h, live);
            if !datas.is_empty() || !live {
                let mut text = String::new();
                for d in &datas {
                    text.push_str("data: ");
                    text.push_str(d);
                    text.push_str("\n\n");
                }
                if text.is_empty() {
                    return None;
                }
                return Some((
                    Ok::<Bytes, Infallible>(Bytes::from(text)),
                    (h, home, next, !live),
                ));
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

/// Answer the open question with `body`, as `wiggum answer` does: 400 for an answer that is
/// empty or too long, 409 when no question is open; a second answer says it replaced the first.
fn answer(h: &crate::disk::handle::Handle, body: &str) -> Response {
    let text = body.trim();
    if text.is_empty() || text.len() > crate::disk::questions::MAX_ANSWER {
        let why = h
            .answer(body, None)
            .err()
            .map_or_else(String::new, |e| e.to_string());
        return (StatusCode::BAD_REQUEST, why).into_response();
    }
    let waiting = crate::sys::fsutil::read_opt(&h.layout.answer())
        .ok()
        .flatten()
        .and_then(|t| crate::disk::questions::parse_answers(&t).ok())
        .unwrap_or_default();
    match h.answer(body, None) {
        Ok(q) => {
            let replaced = waiting
                .iter()
                .any(|w| w.question == q.text && w.iteration == q.iteration);
            let also = if replaced {
                "; it replaces the answer given before"
            } else {
                ""
            };
            format!("answered {}'s question{also}", q.asker()).into_response()
        }
        Err(e) => (StatusCode::CONFLICT, e.to_string()).into_response(),
    }
}

/// Pause, resume, stop, or answer the open question with the request's body (the token was
/// checked by [`guard`]).
async fn control(Path((topic, action)): Path<(String, String)>, body: String) -> Response {
    let h = match handle(&topic) {
        Ok(h) => h,
        Err(r) => return r.into_response(),
    };
    let done = match action.as_str() {
        "pause" => h
            .set_pause(true)
            .map(|_| "paused at the next iteration boundary"),
        "resume" => h.set_pause(false).map(|_| "resumed"),
        "stop" => crate::supervisor::control::request_stop(&h, 10).map(|_| "stopping"),
        "answer" => return answer(&h, &body),
        other => {
            return (StatusCode::NOT_FOUND, format!("no action `{other}`")).into_response();
        }
    };
    match done {
        Ok(said) => said.into_response(),
        Err(e) => (StatusCode::CONFLICT, e.to_string()).into_response(),
    }
}
