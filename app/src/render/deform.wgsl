struct Params {
    n: u32,
    r: u32,
    has_normals: u32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
// Reduced coordinates, r floats (the only per-frame upload).
@group(0) @binding(1) var<storage, read> q: array<f32>;
// U (3 n rows of r, row-major), then dN with the same shape when has_normals != 0.
@group(0) @binding(2) var<storage, read> basis: array<f32>;
// Per vertex: rest position x y z, then rest unit normal nx ny nz.
@group(0) @binding(3) var<storage, read> rest_frame: array<f32>;
// Outputs, 3 floats per vertex: u, X + u, normalize(N + dN q).
@group(0) @binding(4) var<storage, read_write> displacements: array<f32>;
@group(0) @binding(5) var<storage, read_write> positions: array<f32>;
@group(0) @binding(6) var<storage, read_write> normals: array<f32>;

@compute @workgroup_size(64)
fn deform(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = gid.x;
    if (v >= params.n) {
        return;
    }
    let r = params.r;
    let row = 3u * v * r;
    var u = vec3<f32>(0.0, 0.0, 0.0);
    for (var j = 0u; j < r; j = j + 1u) {
        let qj = q[j];
        u = u + qj * vec3<f32>(basis[row + j], basis[row + r + j], basis[row + 2u * r + j]);
    }
    let o = 3u * v;
    let f = 6u * v;
    displacements[o] = u.x;
    displacements[o + 1u] = u.y;
    displacements[o + 2u] = u.z;
    positions[o] = rest_frame[f] + u.x;
    positions[o + 1u] = rest_frame[f + 1u] + u.y;
    positions[o + 2u] = rest_frame[f + 2u] + u.z;
    if (params.has_normals != 0u) {
        let drow = 3u * params.n * r + row;
        var m = vec3<f32>(rest_frame[f + 3u], rest_frame[f + 4u], rest_frame[f + 5u]);
        for (var j = 0u; j < r; j = j + 1u) {
            let qj = q[j];
            m = m + qj * vec3<f32>(basis[drow + j], basis[drow + r + j], basis[drow + 2u * r + j]);
        }
        let len2 = dot(m, m);
        var nn = vec3<f32>(0.0, 0.0, 0.0);
        if (len2 > 0.0) {
            nn = m * inverseSqrt(len2);
        }
        normals[o] = nn.x;
        normals[o + 1u] = nn.y;
        normals[o + 2u] = nn.z;
    }
}
