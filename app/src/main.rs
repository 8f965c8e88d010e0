//! `haptics`: the command-line front end. See `haptics --help`.

fn main() {
    // Sparse solves run on one thread: the haptic and render threads own the other
    // cores at run time, and for the bundled meshes faer's thread pool costs more than it
    // saves (the beam demo steps 30% faster sequentially).
    faer::set_global_parallelism(faer::Par::Seq);
    if let Err(err) = haptics_app::cli::run() {
        eprintln!("error: {err}");
        let mut source = err.source();
        while let Some(s) = source {
            eprintln!("  caused by: {s}");
            source = s.source();
        }
        std::process::exit(1);
    }
}
