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
    block_header_constants(&dir.join("memsidecar/v1/block.proto"))?;
    println!("cargo:rerun-if-env-changed=MEMSIDECAR_PROTO_DIR");
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    prost_build::compile_protos(&files, &[dir])
}

/// prost keeps no custom options, so the `(text)` of each `BlockHeader` value in block.proto
/// becomes a `pub const` in OUT_DIR/block_headers.rs (e.g. `BLOCK_HEADER_CONTEXT`).
fn block_header_constants(proto: &std::path::Path) -> std::io::Result<()> {
    println!("cargo:rerun-if-changed={}", proto.display());
    let source = std::fs::read_to_string(proto)?;
    let mut out = String::new();
    for line in source.lines().map(str::trim) {
        let marker = "(text) = \"";
        let (Some(name), Some(start)) = (line.split_whitespace().next(), line.find(marker)) else {
            continue;
        };
        let rest = &line[start + marker.len()..];
        let text = &rest[..rest.find('"').expect("a closed (text) string in block.proto")];
        out.push_str(&format!("pub const {name}: &str = {text:?};\n"));
    }
    assert!(out.contains("BLOCK_HEADER_CONTEXT"), "block.proto has no BLOCK_HEADER_CONTEXT text");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let dest = out_dir.join("block_headers.rs");
    std::fs::write(dest, out)
}
