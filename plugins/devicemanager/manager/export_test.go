package manager

// TrashName is the directory under the socket root that released
// directories are moved to.
const TrashName = trashName

// SetBeforeRemove has the remover call f with each trash entry's name
// before removing it; call it before Start.
func SetBeforeRemove(m *Manager, f func(name string)) { m.remover.beforeRemove = f }
