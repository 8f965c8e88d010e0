struct Camera { view_proj: mat4x4<f32>, eye: vec4<f32>, light: vec4<f32> };
struct Object { model: mat4x4<f32>, color: vec4<f32> };
@group(0) @binding(0) var<uniform> camera: Camera;
@group(1) @binding(0) var<uniform> object: Object;

struct MeshOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
};

@vertex
fn vs_mesh(@location(0) position: vec3<f32>, @location(1) normal: vec3<f32>) -> MeshOut {
    var out: MeshOut;
    let world = object.model * vec4<f32>(position, 1.0);
    out.clip = camera.view_proj * world;
    out.world = world.xyz;
    out.normal = (object.model * vec4<f32>(normal, 0.0)).xyz;
    return out;
}

@fragment
fn fs_mesh(in: MeshOut) -> @location(0) vec4<f32> {
    let v = normalize(camera.eye.xyz - in.world);
    var n = in.normal;
    let len = length(n);
    if (len > 1e-12) { n = n / len; } else { n = v; }
    // Two-sided: soups have mixed winding, so face the viewer.
    if (dot(n, v) < 0.0) { n = -n; }
    let l = normalize(camera.light.xyz);
    let fill = normalize(vec3<f32>(-l.x, 0.3, -l.z));
    let diffuse = max(dot(n, l), 0.0) * 0.75 + max(dot(n, fill), 0.0) * 0.2 + 0.12;
    let h = normalize(l + v);
    let specular = pow(max(dot(n, h), 0.0), 48.0) * 0.25;
    return vec4<f32>(object.color.rgb * diffuse + vec3<f32>(specular), object.color.a);
}

struct LineOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) color: vec4<f32>,
};

@vertex
fn vs_line(@location(0) position: vec3<f32>, @location(1) color: vec4<f32>) -> LineOut {
    var out: LineOut;
    out.clip = camera.view_proj * object.model * vec4<f32>(position, 1.0);
    out.color = color;
    return out;
}

@fragment
fn fs_line(in: LineOut) -> @location(0) vec4<f32> {
    return in.color;
}
