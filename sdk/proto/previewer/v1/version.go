package previewerv1

// ProtocolVersion is the major version of the previewer protocol: the vN of this
// package (kule.previewer.v1) and the "kule:protocol-version" header of
// previewer.proto. The go-plugin handshake of a previewer plugin carries it
// (sdk/plugin.Handshake); a test holds the three together. A change that
// breaks old plugins is a new package, never a new value here.
const ProtocolVersion = 1
