// Package tasks is the task tree of one root: which task is active, where undo,
// redo and switch lead, the walk between two tasks, and each task's status
// relative to the active one. It knows nothing about files or storage.
package tasks
