pub mod dynamics;
pub mod fem;
pub mod mesh;
pub mod reduction;
