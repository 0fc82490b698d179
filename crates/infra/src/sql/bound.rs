//! Statements written by hand, with every value bound: [`Bound`] hands out the placeholders
//! and keeps the values, so that no value is ever written into a statement's text.

use sea_orm::{DbBackend, Statement, Value};

/// The values of one statement, each with its placeholder, numbered in the order they are
/// bound (`$1` on PostgreSQL, `?1` on SQLite).
pub(crate) struct Bound {
    backend: DbBackend,
    values: Vec<Value>,
}

impl Bound {
    pub(crate) fn new(backend: DbBackend) -> Self {
        Self { backend, values: Vec::new() }
    }

    /// Binds `value`: its placeholder.
    pub(crate) fn bind(&mut self, value: impl Into<Value>) -> String {
        self.values.push(value.into());
        let n = self.values.len();
        match self.backend {
            DbBackend::Postgres => format!("${n}"),
            _ => format!("?{n}"),
        }
    }

    /// `column NOT IN (...)` of `values`, each bound; a condition every row meets when there
    /// are none.
    pub(crate) fn not_in<V: Into<Value>>(
        &mut self,
        column: &str,
        values: impl IntoIterator<Item = V>,
    ) -> String {
        let marks: Vec<String> = values.into_iter().map(|value| self.bind(value)).collect();
        if marks.is_empty() {
            "1 = 1".to_owned()
        } else {
            format!("{column} NOT IN ({})", marks.join(", "))
        }
    }

    /// The statement `sql`, written with this binding's placeholders.
    pub(crate) fn statement(self, sql: impl Into<String>) -> Statement {
        Statement::from_sql_and_values(self.backend, sql, self.values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_follow_the_order_of_binding_in_each_database_s_spelling() {
        let mut postgres = Bound::new(DbBackend::Postgres);
        assert_eq!(postgres.bind(7_i64), "$1");
        assert_eq!(postgres.not_in("e.owner", ["a'b", "c"]), "e.owner NOT IN ($2, $3)");
        assert_eq!(postgres.not_in("e.id", Vec::<i64>::new()), "1 = 1");
        let statement = postgres.statement("SELECT 1");
        let values = statement.values.expect("values").0;
        assert_eq!(values, vec![7_i64.into(), "a'b".into(), "c".into()]);

        let mut sqlite = Bound::new(DbBackend::Sqlite);
        assert_eq!(sqlite.bind("x"), "?1");
        assert_eq!(sqlite.not_in("id", [1_i64, 2]), "id NOT IN (?2, ?3)");
    }
}
