//! Owner ids as small numbers, for what is held per link in memory.
//!
//! The redirect cache keeps, with every link, whose it is (a click is counted in its
//! owner's rollups too). A number instead of the id's text keeps that to four bytes per
//! link, and lets the redirect path hand a click's owner to the recorder by copying it
//! rather than by touching a reference count that every core shares. Owners are few
//! (one per API key's owner) and are never forgotten while the process lives.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// An owner, by the number this process gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OwnerId(u32);

/// The owners this process has seen. Cheap to clone; clones share everything.
#[derive(Debug, Clone, Default)]
pub struct Owners(Arc<RwLock<Table>>);

#[derive(Debug, Default)]
struct Table {
    names: Vec<Arc<str>>,
    ids: HashMap<Arc<str>, OwnerId>,
}

impl Owners {
    /// The number of `owner`, given now if it had none.
    pub fn intern(&self, owner: &str) -> OwnerId {
        if let Some(id) = self.read().ids.get(owner) {
            return *id;
        }
        let mut table = self.0.write().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = table.ids.get(owner) {
            return *id;
        }
        // More than four billion owners in one process's memory cannot happen before
        // the memory runs out; saturating keeps this total all the same.
        let id = OwnerId(u32::try_from(table.names.len()).unwrap_or(u32::MAX));
        let name: Arc<str> = Arc::from(owner);
        table.names.push(name.clone());
        table.ids.insert(name, id);
        id
    }

    /// The names of the owners, by number, as they are now.
    pub fn names(&self) -> Names {
        Names(self.read().names.clone())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Table> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }
}

/// A copy of the owners' names, to resolve many ids without a lock each.
#[derive(Debug)]
pub struct Names(Vec<Arc<str>>);

impl Names {
    /// The owner's id text; `None` for a number this process never gave.
    pub fn get(&self, id: OwnerId) -> Option<&str> {
        self.0.get(id.0 as usize).map(|n| n.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_owner_one_number() {
        let owners = Owners::default();
        let (ana, bo) = (owners.intern("ana"), owners.intern("bo"));
        assert_ne!(ana, bo);
        assert_eq!(owners.intern("ana"), ana);
        let names = owners.names();
        assert_eq!((names.get(ana), names.get(bo)), (Some("ana"), Some("bo")));
        assert_eq!(Owners::default().names().get(ana), None);
    }
}
