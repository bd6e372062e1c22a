package extensionv1

// ProtocolVersion is the major version of the extension host protocol: the
// vN of this package (kule.extension.v1) and the "kule:protocol-version"
// header of extension.proto. The go-plugin handshake of the extension host
// carries it (sdk/extension.Handshake); a test holds the three together. A
// change that breaks old hosts is a new package, never a new value here.
const ProtocolVersion = 1
