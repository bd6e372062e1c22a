// Package plugin is the wire side of Kule's plugins: the go-plugin handshake
// every plugin and the kernel agree on, the Serve helpers a plugin's main
// calls (ServeDiffer), and the gRPC client the kernel talks to a plugin
// through. A plugin author needs this package and the package of their kind
// (sdk/differ, sdk/previewer) and nothing else; the generated protobuf code under sdk/proto
// stays behind the hand-written types here, so the wire can move without
// breaking plugin authors.
//
// A differ's main is one line:
//
//	func main() { plugin.ServeDiffer(myDiffer{}) }
package plugin

import (
	"errors"

	goplugin "github.com/hashicorp/go-plugin"

	differv1 "github.com/kulehq/kule/sdk/proto/differ/v1"
	previewerv1 "github.com/kulehq/kule/sdk/proto/previewer/v1"
	transportv1 "github.com/kulehq/kule/sdk/proto/transport/v1"
)

// Kinds of plugin. The kind is also the name of the plugin in go-plugin's
// plugin set, and the first half of a built-in's name ("differ/go").
const (
	KindDiffer    = "differ"
	KindPreviewer = "previewer"
	KindTransport = "transport"
)

// Protocol major versions, one per kind, as each kind's proto package states
// it (differv1.ProtocolVersion): the version lives beside the wire types it
// describes, and these names are what the handshake uses.
const (
	DifferProtocolVersion    = differv1.ProtocolVersion
	PreviewerProtocolVersion = previewerv1.ProtocolVersion
	TransportProtocolVersion = transportv1.ProtocolVersion
)

// The magic cookie tells a plugin binary it was started by Kule. It is not
// security (approval by sha256 is); it only keeps a person who runs a plugin
// by hand from staring at a hung process. It never changes once released.
const (
	MagicCookieKey   = "KULE_PLUGIN_MAGIC_COOKIE"
	MagicCookieValue = "8c1f0b3e6a2d4f57b9e0c4a1d7f3e25b-kule-plugin"
)

// Sentinel errors.
var (
	// ErrUnimplemented is returned by a client for an optional method the
	// plugin does not have (the server answered codes.Unimplemented).
	ErrUnimplemented = errors.New("plugin: optional method not implemented by the plugin")
	// ErrUnknownKind is returned for a kind Kule does not know.
	ErrUnknownKind = errors.New("plugin: unknown plugin kind")
)

// ProtocolVersion returns the protocol major version of kind.
func ProtocolVersion(kind string) (int, error) {
	switch kind {
	case KindDiffer:
		return DifferProtocolVersion, nil
	case KindPreviewer:
		return PreviewerProtocolVersion, nil
	case KindTransport:
		return TransportProtocolVersion, nil
	}
	return 0, ErrUnknownKind
}

// Handshake is the go-plugin handshake of a plugin of kind at its current
// protocol version. Plugin and host must agree on all three fields.
func Handshake(kind string) (goplugin.HandshakeConfig, error) {
	v, err := ProtocolVersion(kind)
	if err != nil {
		return goplugin.HandshakeConfig{}, err
	}
	return goplugin.HandshakeConfig{
		ProtocolVersion:  uint(v),
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}, nil
}
