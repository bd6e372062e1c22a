package differv1

// ProtocolVersion is the major version of the differ protocol: the vN of this
// package (kule.differ.v1) and the "kule:protocol-version" header of
// differ.proto. The go-plugin handshake of a differ plugin carries it
// (sdk/plugin.Handshake); a test holds the three together. A change that
// breaks old plugins is a new package, never a new value here.
const ProtocolVersion = 1
