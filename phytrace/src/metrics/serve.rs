//! The metrics over HTTP: `GET /metrics` answers the OpenMetrics exposition (hyper, HTTP/1,
//! on the session's tokio runtime).

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use super::Metrics;
use crate::exit::{Failure, FailureKind};

/// The path the metrics are served at.
pub const PATH: &str = "/metrics";

/// How long the server waits after a failed accept (too many open files) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// A listener on `address`, or a failure that says why not (a port in use, an address not
/// of this machine): bad input, exit 2.
pub fn bind(address: SocketAddr) -> Result<TcpListener, Failure> {
    let bad = |err: std::io::Error| {
        Failure::new(
            FailureKind::BadInput,
            format!("--metrics {address}: cannot listen there: {err}"),
        )
    };
    let listener = TcpListener::bind(address).map_err(bad)?;
    listener.set_nonblocking(true).map_err(bad)?;
    Ok(listener)
}

/// Serves `metrics` on `listener` from a task of the current tokio runtime; returns the
/// address served.
pub fn spawn(listener: TcpListener, metrics: Arc<Metrics>) -> Result<SocketAddr> {
    let address = listener.local_addr()?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    tokio::spawn(accept(listener, metrics));
    Ok(address)
}

/// Accepts connections for as long as the runtime runs, each served on a task of its own.
async fn accept(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let metrics = Arc::clone(&metrics);
        let service = service_fn(move |request| {
            let response = respond(&metrics, &request);
            async move { Ok::<_, Infallible>(response) }
        });
        tokio::spawn(async move {
            // A client that goes away mid-request ends its connection, nothing else.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The answer to `request`.
fn respond(metrics: &Metrics, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let (status, body) = match (request.method(), request.uri().path()) {
        (&Method::GET | &Method::HEAD, PATH) => {
            return answer(StatusCode::OK, super::CONTENT_TYPE, metrics.encode());
        }
        (&Method::GET | &Method::HEAD, _) => (
            StatusCode::NOT_FOUND,
            format!("phytrace serves its metrics at {PATH}\n"),
        ),
        _ => (
            StatusCode::METHOD_NOT_ALLOWED,
            "phytrace's metrics are read with GET\n".to_owned(),
        ),
    };
    let mut response = answer(status, "text/plain; charset=utf-8", body);
    if status == StatusCode::METHOD_NOT_ALLOWED {
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    response
}

/// A response with `status` and `body` of type `content_type`.
fn answer(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
