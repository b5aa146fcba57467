// model-no-synthesis: a canonical text field only takes extracted source data.
use pond_canonical::Text;

fn main() {
    let _text: Text = Text::from("made up".to_owned());
}
