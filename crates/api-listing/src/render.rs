//! Types, generics and function signatures of rustdoc's JSON (format 57) written back as Rust,
//! short enough to read in a listing: paths as the code wrote them, `where` clauses left out.
//! A shape this renderer does not know is written as `_`, so a new rustdoc format degrades
//! the listing instead of failing it.

use serde_json::Value;

/// `ty` as Rust source.
pub fn ty(t: &Value) -> String {
    if let Some(s) = t.as_str() {
        return if s == "infer" { "_".into() } else { s.into() };
    }
    let Some((kind, v)) = t.as_object().and_then(|o| o.iter().next()) else {
        return "_".into();
    };
    match kind.as_str() {
        "resolved_path" => path(v),
        "generic" | "primitive" => v.as_str().unwrap_or("_").into(),
        "tuple" => {
            let parts: Vec<String> = list(v).iter().map(ty).collect();
            if parts.len() == 1 {
                format!("({},)", parts[0])
            } else {
                format!("({})", parts.join(", "))
            }
        }
        "slice" => format!("[{}]", ty(v)),
        "array" => format!("[{}; {}]", ty(&v["type"]), v["len"].as_str().unwrap_or("_")),
        "borrowed_ref" => format!("{}{}", ref_prefix(v), ty(&v["type"])),
        "raw_pointer" => {
            let m = if v["is_mutable"].as_bool() == Some(true) {
                "mut"
            } else {
                "const"
            };
            format!("*{m} {}", ty(&v["type"]))
        }
        "dyn_trait" => {
            let mut parts: Vec<String> = list(&v["traits"])
                .iter()
                .map(|t| path(&t["trait"]))
                .collect();
            if let Some(l) = v["lifetime"].as_str() {
                parts.push(l.into());
            }
            format!("dyn {}", parts.join(" + "))
        }
        "impl_trait" => format!("impl {}", bounds(v)),
        "function_pointer" => format!("fn{}", sig_tail(&v["sig"])),
        "qualified_path" => {
            let trait_ = if v["trait"].is_null() {
                String::new()
            } else {
                format!(" as {}", path(&v["trait"]))
            };
            format!(
                "<{}{trait_}>::{}",
                ty(&v["self_type"]),
                v["name"].as_str().unwrap_or("_")
            )
        }
        _ => "_".into(),
    }
}

/// A path with its generic arguments (`Option<T>`, `Fn(u64) -> bool`).
pub fn path(p: &Value) -> String {
    format!("{}{}", p["path"].as_str().unwrap_or("_"), args(&p["args"]))
}

fn args(a: &Value) -> String {
    if let Some(ab) = a.get("angle_bracketed") {
        let mut parts: Vec<String> = list(&ab["args"])
            .iter()
            .map(|g| match g.as_object().and_then(|o| o.iter().next()) {
                Some((k, v)) if k == "type" => ty(v),
                Some((k, v)) if k == "lifetime" => v.as_str().unwrap_or("_").into(),
                Some((k, v)) if k == "const" => v["expr"].as_str().unwrap_or("_").into(),
                _ => "_".into(),
            })
            .collect();
        for c in list(&ab["constraints"]) {
            let name = c["name"].as_str().unwrap_or("_");
            match c["binding"].get("equality").and_then(|e| e.get("type")) {
                Some(t) => parts.push(format!("{name} = {}", ty(t))),
                None => parts.push(format!("{name}: {}", bounds(&c["binding"]["constraint"]))),
            }
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("<{}>", parts.join(", "))
        }
    } else if let Some(p) = a.get("parenthesized") {
        let inputs: Vec<String> = list(&p["inputs"]).iter().map(ty).collect();
        let out = if p["output"].is_null() {
            String::new()
        } else {
            format!(" -> {}", ty(&p["output"]))
        };
        format!("({}){out}", inputs.join(", "))
    } else {
        String::new()
    }
}

/// Trait and lifetime bounds joined by `+`.
pub fn bounds(b: &Value) -> String {
    list(b)
        .iter()
        .map(|b| {
            if let Some(t) = b.get("trait_bound") {
                let maybe = if t["modifier"].as_str() == Some("maybe") {
                    "?"
                } else {
                    ""
                };
                format!("{maybe}{}", path(&t["trait"]))
            } else if let Some(l) = b.get("outlives") {
                l.as_str().unwrap_or("_").into()
            } else {
                "_".into()
            }
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// `<T: Bound, 'a>` of a generics object, leaving out the parameters rustdoc made for
/// `impl Trait` arguments (they show in the argument's type).
pub fn generics(g: &Value) -> String {
    let parts: Vec<String> = list(&g["params"])
        .iter()
        .filter_map(|p| {
            let name = p["name"].as_str().unwrap_or("_");
            let kind = &p["kind"];
            if let Some(t) = kind.get("type") {
                if t["is_synthetic"].as_bool() == Some(true) {
                    return None;
                }
                let b = bounds(&t["bounds"]);
                Some(if b.is_empty() {
                    name.into()
                } else {
                    format!("{name}: {b}")
                })
            } else if let Some(c) = kind.get("const") {
                Some(format!("const {name}: {}", ty(&c["type"])))
            } else {
                Some(name.into())
            }
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("<{}>", parts.join(", "))
    }
}

/// `(a: A, b: B) -> R` of a signature object.
fn sig_tail(sig: &Value) -> String {
    let inputs: Vec<String> = list(&sig["inputs"])
        .iter()
        .map(|i| {
            let name = i[0].as_str().unwrap_or("_");
            let t = &i[1];
            match (name, t) {
                ("self", _) => self_arg(t),
                _ => format!("{name}: {}", ty(t)),
            }
        })
        .collect();
    let out = if sig["output"].is_null() {
        String::new()
    } else {
        format!(" -> {}", ty(&sig["output"]))
    };
    format!("({}){out}", inputs.join(", "))
}

/// `self`, `&self`, `&mut self` or `self: T`.
fn self_arg(t: &Value) -> String {
    if t.get("generic").and_then(Value::as_str) == Some("Self") {
        return "self".into();
    }
    if let Some(r) = t.get("borrowed_ref")
        && r["type"].get("generic").and_then(Value::as_str) == Some("Self")
    {
        return format!("{}self", ref_prefix(r));
    }
    format!("self: {}", ty(t))
}

/// `&'a mut ` of a `borrowed_ref` object.
fn ref_prefix(r: &Value) -> String {
    let lt = r["lifetime"]
        .as_str()
        .map(|l| format!("{l} "))
        .unwrap_or_default();
    let m = if r["is_mutable"].as_bool() == Some(true) {
        "mut "
    } else {
        ""
    };
    format!("&{lt}{m}")
}

/// A function item's signature: `unsafe fn name<T>(args) -> R`.
pub fn function(name: &str, f: &Value) -> String {
    let h = &f["header"];
    let mut q = String::new();
    for (key, word) in [
        ("is_const", "const "),
        ("is_async", "async "),
        ("is_unsafe", "unsafe "),
    ] {
        if h[key].as_bool() == Some(true) {
            q.push_str(word);
        }
    }
    format!(
        "{q}fn {name}{}{}",
        generics(&f["generics"]),
        sig_tail(&f["sig"])
    )
}

/// The elements of a JSON array (none for anything else).
pub fn list(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_references_paths_and_signatures() {
        let opt = json!({"resolved_path": {"path": "Option", "id": 1, "args": {"angle_bracketed":
            {"args": [{"type": {"primitive": "u64"}}], "constraints": []}}}});
        assert_eq!(ty(&opt), "Option<u64>");
        let r = json!({"borrowed_ref": {"lifetime": "'a", "is_mutable": true,
            "type": {"slice": {"primitive": "u8"}}}});
        assert_eq!(ty(&r), "&'a mut [u8]");
        let f = json!({"header": {"is_const": false, "is_async": false, "is_unsafe": false},
            "generics": {"params": [], "where_predicates": []},
            "sig": {"inputs": [["self", {"borrowed_ref": {"lifetime": null, "is_mutable": false,
                "type": {"generic": "Self"}}}], ["n", {"primitive": "usize"}]],
                "output": opt, "is_c_variadic": false}});
        assert_eq!(
            function("get", &f),
            "fn get(&self, n: usize) -> Option<u64>"
        );
        assert_eq!(ty(&json!({"something_new": 1})), "_");
    }
}
