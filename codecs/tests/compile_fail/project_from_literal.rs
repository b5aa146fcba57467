// model-project-non-empty / model-no-synthesis: a project cannot be invented from a literal.
use pond_canonical::Project;

fn main() {
    let _p = Project("/tmp".to_owned());
}
