//! The `animal-store` binary: everything is in the library; see `src/lib.rs`.

fn main() -> std::process::ExitCode {
    animal_store::main()
}
