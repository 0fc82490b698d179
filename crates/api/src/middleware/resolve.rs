//! The route of a request, looked up once in the route table, and put
//! on the request ([`Resolved`]) for every layer inside to read.

use std::sync::Arc;

use poem::{Request, Response};

use super::{Next, respond};
use crate::routes::{Resolved, RouteTable};

/// Looks the request's route up and puts it on the request.
pub async fn resolve_route(next: Next, mut req: Request) -> poem::Result<Response> {
    if let Some(table) = req.data::<Arc<RouteTable>>().cloned() {
        let resolved = Resolved::of(table, req.uri().path());
        req.extensions_mut().insert(resolved);
    }
    Ok(respond(&next, req).await)
}
