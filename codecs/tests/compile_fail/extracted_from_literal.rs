// model-no-synthesis: codec code cannot make an extracted value out of a literal.
use pond_canonical::seam::Extracted;

fn main() {
    let _project: Extracted<String> = Extracted("/home/someone".to_owned());
}
