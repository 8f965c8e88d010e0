pub mod dynamics;
pub mod fem;
pub mod mesh;
