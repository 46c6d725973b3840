//! What a crate's user can reach, found in rustdoc's JSON the way the user finds it: from the
//! crate root through public modules and `pub use` re-exports (glob ones included), never
//! through a private module. Each reachable item is listed under every path that reaches it,
//! with what hangs off it (public fields, variants, inherent methods and constants, the traits
//! it implements by hand, a trait's items); items re-exported from another crate are listed as
//! such and counted, since the user holds them through this crate. Lines are sorted, so moving
//! code does not change the listing but adding, removing or changing a public item does.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use crate::render::{self, list};

/// A crate's reachable API.
pub struct Listing {
    /// One block per reachable path: its header line, then its members indented.
    pub lines: Vec<String>,
    /// Distinct reachable items (types, traits, functions, aliases, constants, statics,
    /// macros, and other crates' items re-exported), each counted once however many paths
    /// reach it. Modules are not counted.
    pub items: usize,
    /// Their members: fields, variants, methods, associated items.
    pub members: usize,
}

/// Walk `doc` (one crate's rustdoc JSON) from its root.
pub fn listing(doc: &Value) -> anyhow::Result<Listing> {
    let index = doc["index"]
        .as_object()
        .ok_or_else(|| anyhow::anyhow!("rustdoc JSON without an index"))?;
    let root = id_key(&doc["root"]);
    let name = index
        .get(&root)
        .and_then(|r| r["name"].as_str())
        .ok_or_else(|| anyhow::anyhow!("rustdoc JSON without its root module"))?;
    let mut w = Walker {
        doc,
        blocks: BTreeSet::new(),
        counted: HashSet::new(),
        members: HashSet::new(),
        modules: HashSet::new(),
    };
    w.module(&root, name);
    let lines = w.blocks.into_iter().flat_map(|(_, b)| b).collect();
    Ok(Listing {
        lines,
        items: w.counted.len(),
        members: w.members.len(),
    })
}

struct Walker<'a> {
    doc: &'a Value,
    /// (path, block lines), ordered by path.
    blocks: BTreeSet<(String, Vec<String>)>,
    counted: HashSet<String>,
    /// (item id, member line) pairs, so a type reached by two paths counts its members once.
    members: HashSet<(String, String)>,
    /// (module id, path) already walked: glob re-exports may form cycles.
    modules: HashSet<(String, String)>,
}

/// An id as the index's key (ids are numbers in format 57, strings in some older ones).
fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The item's kind and its kind-specific object.
fn inner(item: &Value) -> (&str, &Value) {
    match item["inner"].as_object().and_then(|o| o.iter().next()) {
        Some((k, v)) => (k.as_str(), v),
        None => (item["inner"].as_str().unwrap_or(""), &Value::Null),
    }
}

fn public(item: &Value) -> bool {
    item["visibility"].as_str() == Some("public")
}

/// `#[non_exhaustive] ` when the item carries the attribute.
fn non_exhaustive(item: &Value) -> &'static str {
    if item["attrs"].to_string().contains("non_exhaustive") {
        "#[non_exhaustive] "
    } else {
        ""
    }
}

impl Walker<'_> {
    fn get(&self, id: &str) -> Option<&Value> {
        self.doc["index"].get(id)
    }

    fn module(&mut self, id: &str, path: &str) {
        if !self.modules.insert((id.to_string(), path.to_string())) {
            return;
        }
        let Some(m) = self.get(id).cloned() else {
            return;
        };
        for child in list(&inner(&m).1["items"]) {
            let cid = id_key(child);
            let Some(item) = self.get(&cid).cloned() else {
                continue;
            };
            if !public(&item) {
                continue;
            }
            let (kind, v) = inner(&item);
            if kind == "use" {
                self.reexport(v, path);
            } else if let Some(name) = item["name"].as_str() {
                self.item(&cid, &item, &format!("{path}::{name}"));
            }
        }
    }

    /// A `pub use` in the module at `path`.
    fn reexport(&mut self, u: &Value, path: &str) {
        let name = u["name"].as_str().unwrap_or("_");
        let target = id_key(&u["id"]);
        if u["is_glob"].as_bool() == Some(true) {
            if let Some(t) = self.get(&target)
                && inner(t).0 == "module"
            {
                self.module(&target, path);
            }
            return;
        }
        if let Some(item) = self.get(&target).cloned() {
            self.item(&target, &item, &format!("{path}::{name}"));
            return;
        }
        // Another crate's item: named by its own path, counted here.
        let (source, kind) = match self.doc["paths"].get(&target) {
            Some(p) => (
                list(&p["path"])
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("::"),
                p["kind"].as_str().unwrap_or("item").to_string(),
            ),
            None => (
                u["source"].as_str().unwrap_or("_").to_string(),
                "item".into(),
            ),
        };
        if kind != "module" {
            self.counted.insert(format!("extern {source}"));
        }
        let line = format!("{path}::{name}: re-export of {kind} {source}");
        self.blocks.insert((format!("{path}::{name}"), vec![line]));
    }

    fn item(&mut self, id: &str, item: &Value, path: &str) {
        let (kind, v) = inner(item);
        let ne = non_exhaustive(item);
        let g = render::generics(&v["generics"]);
        let header = match kind {
            "module" => {
                self.module(id, path);
                return;
            }
            "struct" => format!("{ne}struct {path}{g}"),
            "enum" => format!("{ne}enum {path}{g}"),
            "union" => format!("union {path}{g}"),
            "trait" => {
                let b = render::bounds(&v["bounds"]);
                let b = if b.is_empty() { b } else { format!(": {b}") };
                format!("trait {path}{g}{b}")
            }
            "function" => render::function(path, v),
            "type_alias" => format!("type {path}{g} = {}", render::ty(&v["type"])),
            "constant" => format!("const {path}: {}", render::ty(&v["type"])),
            "static" => format!("static {path}: {}", render::ty(&v["type"])),
            "macro" | "proc_macro" => format!("macro {path}!"),
            other => format!("{other} {path}"),
        };
        self.counted.insert(id.to_string());
        let mut members = BTreeSet::new();
        match kind {
            "struct" => self.struct_members(v, &mut members),
            "enum" => self.variants(v, &mut members),
            "trait" => {
                for i in list(&v["items"]) {
                    if let Some(m) = self.get(&id_key(i)).cloned() {
                        members.insert(self.member(&m));
                    }
                }
            }
            _ => {}
        }
        for i in list(&v["impls"]) {
            self.impl_members(&id_key(i), &mut members);
        }
        for m in &members {
            self.members.insert((id.to_string(), m.clone()));
        }
        let mut block = vec![header];
        block.extend(members.into_iter().map(|m| format!("    {m}")));
        self.blocks.insert((path.to_string(), block));
    }

    fn struct_members(&self, v: &Value, out: &mut BTreeSet<String>) {
        let k = &v["kind"];
        let fields: Vec<Value> = if let Some(p) = k.get("plain") {
            if p["has_stripped_fields"].as_bool() == Some(true) {
                out.insert("(private fields)".into());
            }
            list(&p["fields"]).to_vec()
        } else if let Some(t) = k.get("tuple") {
            if list(t).iter().any(Value::is_null) {
                out.insert("(private fields)".into());
            }
            list(t).iter().filter(|f| !f.is_null()).cloned().collect()
        } else {
            Vec::new()
        };
        for f in fields {
            if let Some(field) = self.get(&id_key(&f))
                && public(field)
            {
                out.insert(format!(
                    "field {}: {}",
                    field["name"].as_str().unwrap_or("_"),
                    render::ty(inner(field).1)
                ));
            }
        }
    }

    fn variants(&self, v: &Value, out: &mut BTreeSet<String>) {
        for vid in list(&v["variants"]) {
            let Some(var) = self.get(&id_key(vid)) else {
                continue;
            };
            let name = var["name"].as_str().unwrap_or("_");
            let k = &inner(var).1["kind"];
            let fields = |ids: &[Value]| -> Vec<String> {
                ids.iter()
                    .filter_map(|f| self.get(&id_key(f)))
                    .map(|f| {
                        let t = render::ty(inner(f).1);
                        match f["name"].as_str() {
                            Some(n) if !n.chars().all(|c| c.is_ascii_digit()) => {
                                format!("{n}: {t}")
                            }
                            _ => t,
                        }
                    })
                    .collect()
            };
            let shape = if let Some(t) = k.get("tuple") {
                format!("({})", fields(list(t)).join(", "))
            } else if let Some(s) = k.get("struct") {
                format!(" {{ {} }}", fields(list(&s["fields"])).join(", "))
            } else {
                String::new()
            };
            out.insert(format!("variant {name}{shape}"));
        }
    }

    /// An inherent impl's public items, or a hand-written trait impl's `impl Trait` line
    /// (auto traits and blanket impls are left out: they follow from the fields).
    fn impl_members(&self, id: &str, out: &mut BTreeSet<String>) {
        let Some(imp) = self.get(id) else {
            return;
        };
        let v = inner(imp).1;
        if v["is_synthetic"].as_bool() == Some(true) || !v["blanket_impl"].is_null() {
            return;
        }
        if !v["trait"].is_null() {
            // The compiler's marker for a derived `PartialEq`, not a trait a user names.
            if v["trait"]["path"].as_str() != Some("StructuralPartialEq") {
                out.insert(format!("impl {}", render::path(&v["trait"])));
            }
            return;
        }
        for i in list(&v["items"]) {
            if let Some(m) = self.get(&id_key(i))
                && public(m)
            {
                out.insert(self.member(m));
            }
        }
    }

    /// A method, associated constant or associated type.
    fn member(&self, m: &Value) -> String {
        let name = m["name"].as_str().unwrap_or("_");
        let (kind, v) = inner(m);
        match kind {
            "function" => render::function(name, v),
            "assoc_const" => format!("const {name}: {}", render::ty(&v["type"])),
            "assoc_type" => format!("type {name}"),
            other => format!("{other} {name}"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A root with a public struct (one public field, one private), a private module whose
    /// public function is re-exported, and another crate's type re-exported.
    #[test]
    fn reaches_through_public_paths_only_and_counts_reexports() {
        let doc = json!({
            "root": 0,
            "index": {
                "0": {"name": "k", "visibility": "public", "attrs": [],
                      "inner": {"module": {"items": [1, 4, 6, 7]}}},
                "1": {"name": "S", "visibility": "public", "attrs": ["#[non_exhaustive]"],
                      "inner": {"struct": {"kind": {"plain": {"fields": [2, 3],
                          "has_stripped_fields": true}},
                          "generics": {"params": []}, "impls": []}}},
                "2": {"name": "a", "visibility": "public", "inner": {"struct_field":
                      {"primitive": "u64"}}},
                "3": {"name": "b", "visibility": "crate", "inner": {"struct_field":
                      {"primitive": "u8"}}},
                "4": {"name": "hidden", "visibility": "crate",
                      "inner": {"module": {"items": [5]}}},
                "5": {"name": "f", "visibility": "public", "inner": {"function": {
                      "header": {}, "generics": {"params": []},
                      "sig": {"inputs": [], "output": null}}}},
                "6": {"name": null, "visibility": "public", "inner": {"use": {
                      "source": "hidden::f", "name": "f", "id": 5, "is_glob": false}}},
                "7": {"name": null, "visibility": "public", "inner": {"use": {
                      "source": "other::T", "name": "T", "id": 99, "is_glob": false}}}
            },
            "paths": {"99": {"crate_id": 1, "path": ["other", "T"], "kind": "struct"}}
        });
        let l = listing(&doc).unwrap();
        assert_eq!(
            l.lines,
            vec![
                "#[non_exhaustive] struct k::S",
                "    (private fields)",
                "    field a: u64",
                "k::T: re-export of struct other::T",
                "fn k::f()",
            ]
        );
        assert_eq!((l.items, l.members), (3, 2));
    }
}
