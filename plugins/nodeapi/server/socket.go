package server

import "io/fs"

// DefaultSocketMode makes the API socket root-only; it lives in a
// directory of its own, memifv1.DefaultSocketPath's.
const DefaultSocketMode = fs.FileMode(0o600)
