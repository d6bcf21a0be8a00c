// Package modeltest checks whole user histories against a model of what
// timeagent must do: sessions of both modes, isolated sessions with apply,
// checkpoints, edits outside sessions, undo, redo, switch and kill -9, run
// with the real binary on real directories. Its tests are the package.
package modeltest
