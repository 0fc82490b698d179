//! The configuration of PostgreSQL's read connections, from the service's database URL.

use std::str::FromStr as _;

use percent_encoding::percent_decode_str;
use sea_orm::sqlx::ConnectOptions as _;
use sea_orm::sqlx::Error;
use sea_orm::sqlx::postgres::{PgConnectOptions, PgSslMode};
use tokio_postgres::config::SslMode;

/// tokio-postgres's configuration of `url`, read by sqlx as the rest of the service reads it:
/// its parameters, and what it leaves out from `PGHOST`, `PGUSER`, `PGPASSWORD`, `~/.pgpass`
/// and the like. sqlx hands the password it resolved out only in a URL of its own.
pub(super) fn config(url: &str) -> Result<tokio_postgres::Config, Error> {
    let options = PgConnectOptions::from_str(url)?;
    let mut config = tokio_postgres::Config::new();
    match options.get_socket() {
        Some(directory) => config.host_path(directory),
        None => config.host(options.get_host()),
    };
    config.port(options.get_port()).user(options.get_username());
    if let Some(database) = options.get_database() {
        config.dbname(database);
    }
    if let Some(password) = options.to_url_lossy().password() {
        config.password(percent_decode_str(password).collect::<Vec<u8>>());
    }
    if let Some(name) = options.get_application_name() {
        config.application_name(name);
    }
    if let Some(settings) = options.get_options() {
        config.options(settings);
    }
    config.ssl_mode(match options.get_ssl_mode() {
        PgSslMode::Disable => SslMode::Disable,
        PgSslMode::Allow | PgSslMode::Prefer => SslMode::Prefer,
        PgSslMode::Require | PgSslMode::VerifyCa | PgSslMode::VerifyFull => SslMode::Require,
    });
    Ok(config)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use tokio_postgres::config::{Host, SslMode};

    use super::config;

    #[test]
    fn a_url_is_read_as_the_rest_of_the_service_reads_it() {
        let url = "postgres://animal:s%40cret@db.internal:5433/pets?application_name=store";
        let tcp = config(url).expect("a configuration");
        assert_eq!(tcp.get_hosts(), [Host::Tcp("db.internal".to_owned())]);
        assert_eq!(tcp.get_ports(), [5433]);
        assert_eq!(tcp.get_user(), Some("animal"));
        assert_eq!(tcp.get_password(), Some(&b"s@cret"[..]));
        assert_eq!(tcp.get_dbname(), Some("pets"));
        assert_eq!(tcp.get_application_name(), Some("store"));

        let socket = config("postgres://animal@localhost/pets?host=/run/postgresql")
            .expect("a configuration");
        assert_eq!(socket.get_hosts(), [Host::Unix(Path::new("/run/postgresql").to_owned())]);
        assert_eq!(socket.get_ports(), [5432]);

        // The password up to the last `@`, as sqlx reads it; parameters only sqlx knows.
        let sqlx_only = "postgres://animal:p@ss@db.internal/pets?sslmode=disable\
                         &statement-cache-capacity=500&options[search_path]=app";
        let sqlx_only = config(sqlx_only).expect("a configuration");
        assert_eq!(sqlx_only.get_password(), Some(&b"p@ss"[..]));
        assert_eq!(sqlx_only.get_hosts(), [Host::Tcp("db.internal".to_owned())]);
        assert_eq!(sqlx_only.get_ssl_mode(), SslMode::Disable);
        assert_eq!(sqlx_only.get_options(), Some("-c search_path=app"));
    }

    #[test]
    fn a_url_that_cannot_be_read_is_refused() {
        assert!(config("postgres://animal@localhost:notaport/pets").is_err());
    }
}
