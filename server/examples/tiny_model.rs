//! Writes a tiny random BERT of the store's vector width (pond_embed::tiny) as an installed
//! model, for benchmarks that need vectors in a store at scale without a real model's cost:
//! its vectors mean nothing, but the embed stage, the vector index and hybrid search run on
//! them exactly as on a real model's.
//!
//! usage: tiny_model MODELS_DIR NAME [LAYERS]

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: tiny_model MODELS_DIR NAME [LAYERS]");
        std::process::exit(2);
    }
    let layers = args.get(3).map_or(1, |l| l.parse().expect("LAYERS"));
    let dir = pond_embed::tiny::TinyModel {
        dimension: pond_store::sessions::schema::VECTOR_DIM as usize,
        heads: 4,
        layers,
        ..Default::default()
    }
    .write(std::path::Path::new(&args[1]), &args[2])
    .expect("writing the model");
    println!("{}", dir.display());
}
