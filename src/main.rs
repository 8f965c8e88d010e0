//! `haptics`: the command-line front end. See `haptics --help`.

fn main() {
    if let Err(err) = haptics::cli::run() {
        eprintln!("error: {err}");
        let mut source = err.source();
        while let Some(s) = source {
            eprintln!("  caused by: {s}");
            source = s.source();
        }
        std::process::exit(1);
    }
}
