//! Generates the prost messages from the .proto contract (MEMSIDECAR_PROTO_DIR, default
//! the repository's proto/ folder).
use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = std::env::var_os("MEMSIDECAR_PROTO_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto"));
    let files: Vec<PathBuf> = ["memory", "injection", "store", "settings", "vault"]
        .iter()
        .map(|name| dir.join(format!("memsidecar/v1/{name}.proto")))
        .collect();
    println!("cargo:rerun-if-env-changed=MEMSIDECAR_PROTO_DIR");
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    prost_build::compile_protos(&files, &[dir])
}
