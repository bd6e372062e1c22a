package transportv1

// ProtocolVersion is the major version of the transport protocol: the vN of this
// package (kule.transport.v1) and the "kule:protocol-version" header of
// transport.proto. The go-plugin handshake of a transport plugin carries it
// (sdk/plugin.Handshake); a test holds the three together. A change that
// breaks old plugins is a new package, never a new value here.
const ProtocolVersion = 1
