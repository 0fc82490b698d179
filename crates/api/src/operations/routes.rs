//! The table of routes: the operations of [`OPERATIONS`], and the addresses that are not
//! operations (the document, the docs page, the probes, the metrics).
//!
//! The middleware needs to know, for a request path, which route it is (for logs), which
//! methods the route has (for the `Allow` header of a 405, which poem does not send), and
//! which operation a method reaches, for what it asks of the layers (see
//! `operations/table.rs`). The table is built once, at start, from the static table of
//! operations; the outermost layer looks a request up in it once.

use std::sync::Arc;

use poem::http::Method;

use crate::operations::{Caching, OPERATIONS, Operation};
use crate::wire::stability::Stability;

/// The extension of an operation in the document that names the scope a key needs to call
/// it: `read` for the methods that change nothing (`GET`), `write` for the others.
pub const SCOPE_EXTENSION: &str = "x-scope";

/// One method of a route, the operation it reaches, if it is one, and how its answers may
/// be kept.
#[derive(Debug, Clone)]
struct RouteMethod {
    method: Method,
    operation: Option<&'static Operation>,
    caching: Caching,
}

/// One route: a path template and the methods on it.
#[derive(Debug, Clone)]
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

    /// The operation `method` reaches, if it reaches one (not the document itself, a probe
    /// or the metrics).
    pub fn operation(&self, method: &Method) -> Option<&'static Operation> {
        self.method(method).and_then(|m| m.operation)
    }

    /// Whether the route answers `method`.
    pub fn allows(&self, method: &Method) -> bool {
        self.method(method).is_some()
    }

    /// How the answers `method` gets on this route may be kept.
    pub fn caching(&self, method: &Method) -> Caching {
        self.method(method).map_or(Caching::NoStore, |m| m.caching)
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
    /// The operations of [`OPERATIONS`], the experimental ones only when `experimental`.
    pub fn of_operations(experimental: bool) -> Self {
        let mut routes: Vec<RouteEntry> = Vec::new();
        let served =
            OPERATIONS.iter().filter(|op| experimental || op.stability != Stability::Experimental);
        for operation in served {
            let method = RouteMethod {
                method: operation.method.clone(),
                operation: Some(operation),
                caching: operation.caching,
            };
            match routes.iter_mut().find(|route| route.template == operation.path) {
                Some(route) => route.methods.push(method),
                None => routes.push(RouteEntry::new(operation.path.to_owned(), vec![method])),
            }
        }
        Self { routes }
    }

    /// Adds a route that is not an operation (the document itself, say), answering `GET`.
    #[must_use]
    pub fn with_route(mut self, template: &str, caching: Caching) -> Self {
        let get = RouteMethod { method: Method::GET, operation: None, caching };
        self.routes.push(RouteEntry::new(template.to_owned(), vec![get]));
        self
    }

    /// The position in the table of the route `path` belongs to.
    fn position(&self, path: &str) -> Option<usize> {
        self.routes.iter().position(|r| r.matches(path))
    }
}

/// The route of one request, looked up once, by the outermost layer (`envelope`), for
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

    #[test]
    fn paths_match_their_templates_only() {
        let table =
            Arc::new(RouteTable::of_operations(true).with_route("/v1/docs", Caching::Published));
        let find = |path: &str| Resolved::of(Arc::clone(&table), path).route().cloned();
        assert_eq!(
            find("/v1/pets").as_ref().map(RouteEntry::allow).as_deref(),
            Some("GET, POST, HEAD")
        );
        let get_pet = find("/v1/pets/12").expect("a route");
        assert_eq!(get_pet.template(), "/v1/pets/{petId}");
        let id = |route: &RouteEntry, method: Method| route.operation(&method).map(|op| op.id);
        assert_eq!(id(&get_pet, Method::GET), Some("getPet"));
        assert_eq!(id(&get_pet, Method::HEAD), Some("getPet"));
        assert_eq!(id(&get_pet, Method::DELETE), Some("deletePet"));
        assert!(get_pet.allows(&Method::DELETE) && !get_pet.allows(&Method::PUT));
        assert_eq!(find("/v1/docs").as_ref().map(RouteEntry::allow).as_deref(), Some("GET, HEAD"));
        let docs = find("/v1/docs").expect("a route");
        assert!(docs.allows(&Method::GET) && docs.operation(&Method::GET).is_none());
        assert_eq!(
            id(&find("/v1/store/orders").expect("a route"), Method::POST),
            Some("placeOrder")
        );
        assert!(find("/v1/pets/").is_none());
        assert!(find("/v1/pets/1/2").is_none());
        assert!(find("/v2/pets").is_none());
        assert_eq!(Resolved::of(Arc::clone(&table), "/v1/pets/3").index(), Some(1));
    }

    #[test]
    fn experimental_operations_are_left_out_when_turned_off() {
        let table = Arc::new(RouteTable::of_operations(false));
        let find = |path: &str| Resolved::of(Arc::clone(&table), path).route().cloned();
        let pets = find("/v1/pets/1").expect("getPet is stable");
        assert!(pets.allows(&Method::GET) && !pets.allows(&Method::PATCH));
        assert!(find("/v1/events").is_none());
        assert!(find("/v1/store/orders/1").expect("updateOrder is beta").allows(&Method::PATCH));
    }
}
