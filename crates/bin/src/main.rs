//! The `animal-store` binary: everything is in the library; see `src/lib.rs`.

/// mimalloc rather than glibc's allocator: see docs/decisions/0008-mimalloc.md.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    animal_store::main()
}
