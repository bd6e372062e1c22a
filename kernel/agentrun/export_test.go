package agentrun

// KeptOnly is the knob of the guard that sends a kept secret only to the
// hosts it was kept for.
var KeptOnly = &keptOnly

// PerTaskHomes is the knob of the guard that gives an own_home agent a
// home of each task's own.
var PerTaskHomes = &perTaskHomes

// ReadOnlyHomes is the knob of the guard that keeps the instructions
// placed in an agent's home read-only for the whole run.
var ReadOnlyHomes = &readOnlyHomes
