//! The table of routes, read off the OpenAPI document.
//!
//! The middleware needs to know, for a request path, which route it is (for logs), which
//! methods the route has (for the `Allow` header of a 405, which poem does not send), and
//! what the operation a method reaches asks of the layers: how stable it is, its deprecation
//! (whose headers go even on the responses its handler never produced, such as a 401 or a
//! 429), whether it takes an `Idempotency-Key`, whether it is the rate-limit inquiry. All of
//! it is read off the document once, at start, so that it cannot drift from the operations
//! and no layer looks anything up per request.

use std::sync::Arc;

use poem::http::Method;
use serde_json::Value;

use animal_store_domain::Scope;

use crate::deprecation::Deprecation;
use crate::etag::IF_NONE_MATCH;
use crate::idempotency::IDEMPOTENCY_KEY;
use crate::rate_limit::GET_RATE_LIMIT;
use crate::stability::Stability;

/// The extension of an operation in the document that names the scope a key needs to call
/// it: `read` for the methods that change nothing (`GET`), `write` for the others.
pub const SCOPE_EXTENSION: &str = "x-scope";

/// The scope a key needs to call an operation of `method`.
pub fn scope_of(method: &Method) -> Scope {
    if method == Method::GET || method == Method::HEAD { Scope::Read } else { Scope::Write }
}

/// What a method of a route reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reaches {
    /// An operation of the document.
    Operation,
    /// Something else: the document itself, the docs page, a probe, the metrics.
    Other,
}

/// One method of a route: what the operation it reaches, if it is one, asks of the layers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RouteMethod {
    method: Method,
    reaches: Reaches,
    stability: Stability,
    deprecation: Option<&'static Deprecation>,
    /// It declares the `Idempotency-Key` header.
    takes_idempotency_key: bool,
    /// It reads the caller's rate limit without spending it.
    is_inquiry: bool,
    /// A conditional read (see [`is_conditional_read`]).
    is_conditional: bool,
    /// The scope a key needs to call it (the document's `x-scope`, from the same rule).
    scope: Scope,
    /// The media types of its request body, comma-separated, when it has one.
    body_types: Option<String>,
}

impl RouteMethod {
    /// A method that reaches no operation (the document itself, say).
    fn plain(method: Method) -> Self {
        Self {
            method,
            reaches: Reaches::Other,
            stability: Stability::Stable,
            deprecation: None,
            takes_idempotency_key: false,
            is_inquiry: false,
            is_conditional: false,
            scope: Scope::Read,
            body_types: None,
        }
    }

    /// The method `method` of the document's operation `op`.
    fn of_operation(method: Method, op: &Value) -> Self {
        let operation = op["operationId"].as_str();
        let scope = scope_of(&method);
        let is_conditional = is_conditional_read(&method, op);
        Self {
            method,
            reaches: Reaches::Operation,
            stability: op["x-stability"].as_str().and_then(Stability::named).unwrap_or_default(),
            deprecation: operation.and_then(Deprecation::of),
            takes_idempotency_key: declares_header(op, IDEMPOTENCY_KEY.as_str()),
            is_inquiry: operation == Some(GET_RATE_LIMIT),
            is_conditional,
            scope,
            body_types: op["requestBody"]["content"]
                .as_object()
                .map(|content| content.keys().map(String::as_str).collect::<Vec<_>>().join(", ")),
        }
    }
}

/// One route: a path template and the operations on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteEntry {
    template: String,
    segments: Vec<Option<String>>,
    methods: Vec<RouteMethod>,
}

impl RouteEntry {
    fn new(template: String, methods: Vec<RouteMethod>) -> Self {
        let segments = template
            .split('/')
            .map(|s| (!(s.starts_with('{') && s.ends_with('}'))).then(|| s.to_owned()))
            .collect();
        Self { template, segments, methods }
    }

    /// The path template, `/v1/pets/{petId}` say.
    pub fn template(&self) -> &str {
        &self.template
    }

    /// The value of an `Allow` header: the methods of the route, with `HEAD` wherever `GET`
    /// is (poem answers `HEAD` with the `GET` handler).
    pub fn allow(&self) -> String {
        let mut methods: Vec<&str> = self.methods.iter().map(|m| m.method.as_str()).collect();
        if self.methods.iter().any(|m| m.method == Method::GET) {
            methods.push(Method::HEAD.as_str());
        }
        methods.join(", ")
    }

    /// The entry of `method` on this route; `HEAD` is `GET`'s.
    fn method(&self, method: &Method) -> Option<&RouteMethod> {
        let method = if method == Method::HEAD { &Method::GET } else { method };
        self.methods.iter().find(|m| m.method == method)
    }

    /// Whether the route answers `method`.
    pub fn allows(&self, method: &Method) -> bool {
        self.method(method).is_some()
    }

    /// Whether `method` reaches an operation of the document (not the document itself, a
    /// probe or the metrics).
    pub fn is_operation(&self, method: &Method) -> bool {
        self.method(method).is_some_and(|m| m.reaches == Reaches::Operation)
    }

    /// Whether the operation `method` reaches takes an `Idempotency-Key` header.
    pub fn takes_idempotency_key(&self, method: &Method) -> bool {
        self.method(method).is_some_and(|m| m.takes_idempotency_key)
    }

    /// The deprecation of the operation `method` reaches, if it is deprecated.
    pub fn deprecation(&self, method: &Method) -> Option<&'static Deprecation> {
        self.method(method).and_then(|m| m.deprecation)
    }

    /// Whether the operation `method` reaches answers conditional requests (it declares
    /// `If-None-Match`).
    pub fn is_conditional(&self, method: &Method) -> bool {
        self.method(method).is_some_and(|m| m.is_conditional)
    }

    /// Whether `method` reaches the rate-limit inquiry, which reads the caller's rate limit
    /// without spending it.
    pub fn is_inquiry(&self, method: &Method) -> bool {
        self.method(method).is_some_and(|m| m.is_inquiry)
    }

    /// The scope a key needs for the operation `method` reaches; `read` for what is not an
    /// operation.
    pub fn scope(&self, method: &Method) -> Scope {
        self.method(method).map_or(Scope::Read, |m| m.scope)
    }

    /// The media types the route's `PATCH` takes, for `Accept-Patch` (RFC 5789).
    pub fn accept_patch(&self) -> Option<&str> {
        self.method(&Method::PATCH).and_then(|m| m.body_types.as_deref())
    }

    /// How stable the operation `method` reaches is; stable for what is not an operation.
    pub fn stability(&self, method: &Method) -> Stability {
        self.method(method).map_or(Stability::Stable, |m| m.stability)
    }

    fn matches(&self, path: &str) -> bool {
        let mut parts = path.split('/');
        self.segments.iter().all(|segment| match (segment, parts.next()) {
            (Some(literal), Some(part)) => literal == part,
            (None, Some(part)) => !part.is_empty(),
            (_, None) => false,
        }) && parts.next().is_none()
    }
}

/// Every route the service answers.
#[derive(Debug, Clone, Default)]
pub struct RouteTable {
    routes: Vec<RouteEntry>,
}

impl RouteTable {
    /// The operations of `document`, mounted under `prefix`.
    pub fn from_document(document: &Value, prefix: &str) -> Self {
        let routes = document["paths"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(path, item)| {
                let methods = item
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(method, op)| {
                        let method =
                            Method::from_bytes(method.to_ascii_uppercase().as_bytes()).ok()?;
                        Some(RouteMethod::of_operation(method, op))
                    })
                    .collect();
                RouteEntry::new(format!("{prefix}{path}"), methods)
            })
            .collect();
        Self { routes }
    }

    /// Adds a route that is not an operation (the document itself, say).
    #[must_use]
    pub fn with_route(mut self, template: &str, methods: &[Method]) -> Self {
        self.routes.push(RouteEntry::new(
            template.to_owned(),
            methods.iter().cloned().map(RouteMethod::plain).collect(),
        ));
        self
    }

    /// The position in the table of the route `path` belongs to.
    fn position(&self, path: &str) -> Option<usize> {
        self.routes.iter().position(|r| r.matches(path))
    }
}

/// Whether the operation `op`, reached by `method`, is a conditional read: a `GET` that
/// declares `If-None-Match`, whose answers carry an `ETag` and may be `304 Not Modified`.
/// (A write that declares it reads it as a precondition of its own, answered 412.)
pub fn is_conditional_read(method: &Method, op: &Value) -> bool {
    method == Method::GET && declares_header(op, IF_NONE_MATCH)
}

/// Whether the operation `op` of the document declares the request header `name`.
pub fn declares_header(op: &Value, name: &str) -> bool {
    op["parameters"].as_array().is_some_and(|parameters| {
        parameters.iter().any(|p| {
            p["in"] == "header" && p["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(name))
        })
    })
}

/// The route of one request, looked up once, by the outermost layer (`resolve_route`), for
/// every layer inside to read: none looks it up again.
#[derive(Debug, Clone)]
pub struct Resolved {
    table: Arc<RouteTable>,
    index: Option<usize>,
}

impl Resolved {
    /// The route of `path` in `table`.
    pub fn of(table: Arc<RouteTable>, path: &str) -> Self {
        let index = table.position(path);
        Self { table, index }
    }

    /// The route, if the path has one.
    pub fn route(&self) -> Option<&RouteEntry> {
        self.table.routes.get(self.index?)
    }

    /// The route's position in the table: a small number that names it without its
    /// template.
    pub fn index(&self) -> Option<usize> {
        self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_match_their_templates_only() {
        let doc = json!({"paths": {
            "/pets": {"get": {"operationId": "listPets"}, "post": {"operationId": "createPet"}},
            "/pets/{petId}": {"get": {"operationId": "getPet"}},
            "/rate-limit": {"get": {"operationId": "getRateLimit"}},
            "/store/orders": {"post": {
                "operationId": "placeOrder",
                "x-stability": "experimental",
                "parameters": [{"in": "header", "name": "Idempotency-Key"}]
            }}
        }});
        let table =
            Arc::new(RouteTable::from_document(&doc, "/v1").with_route("/v1/docs", &[Method::GET]));
        let find = |path: &str| Resolved::of(Arc::clone(&table), path).route().cloned();
        assert_eq!(
            find("/v1/pets").as_ref().map(RouteEntry::allow).as_deref(),
            Some("GET, POST, HEAD")
        );
        let get_pet = find("/v1/pets/12").expect("a route");
        assert_eq!(get_pet.template(), "/v1/pets/{petId}");
        assert_eq!(get_pet.deprecation(&Method::GET), Some(&crate::deprecation::GET_PET));
        assert_eq!(get_pet.deprecation(&Method::HEAD), Some(&crate::deprecation::GET_PET));
        assert_eq!(get_pet.deprecation(&Method::DELETE), None);
        assert!(!get_pet.allows(&Method::DELETE));
        assert_eq!(find("/v1/docs").as_ref().map(RouteEntry::allow).as_deref(), Some("GET, HEAD"));
        let orders = find("/v1/store/orders").expect("a route");
        assert_eq!(orders.stability(&Method::POST), Stability::Experimental);
        assert!(orders.allows(&Method::POST) && !orders.allows(&Method::GET));
        assert!(orders.takes_idempotency_key(&Method::POST));
        assert!(!get_pet.takes_idempotency_key(&Method::GET));
        assert_eq!(get_pet.stability(&Method::GET), Stability::Stable);
        let inquiry = find("/v1/rate-limit").expect("a route");
        assert!(inquiry.is_inquiry(&Method::GET) && !get_pet.is_inquiry(&Method::GET));
        assert_eq!(find("/v1/pets").and_then(|pets| pets.deprecation(&Method::GET)), None);
        assert!(find("/v1/pets/").is_none());
        assert!(find("/v1/pets/1/2").is_none());
        assert!(find("/v2/pets").is_none());
        assert_eq!(Resolved::of(Arc::clone(&table), "/v1/pets/3").index(), Some(1));
    }
}
