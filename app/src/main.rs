//! `haptics`: the command-line front end. See `haptics --help`.

fn main() {
    // Sparse solves run on one thread: the haptic and render threads own the other
    // cores at run time, and for the bundled meshes faer's thread pool costs more than it
    // saves (the beam demo steps 30% faster sequentially).
    faer::set_global_parallelism(faer::Par::Seq);
    // Fault-injection tests set HAPTICS_INJECT_FAULT (see haptics::io::fault).
    if let Err(e) = haptics::io::fault::inject_from_env() {
        eprintln!("{e}");
        std::process::exit(2);
    }
    if let Err(err) = haptics_app::cli::run() {
        if let Some(e) = err.downcast_ref::<haptics_app::cli::Exit>() {
            std::process::exit(e.0);
        }
        // `check` distinguishes bad input (2) from a colliding path (1).
        let code = if err
            .downcast_ref::<haptics_app::cli::check::BadInput>()
            .is_some()
        {
            2
        } else {
            1
        };
        // Each distinct message once: a cause already in the line before is skipped.
        for line in haptics_app::cli::error_lines(&err) {
            eprintln!("{line}");
        }
        std::process::exit(code);
    }
}
