package secrets

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"

	"github.com/godbus/dbus/v5"
)

// The Secret Service API (freedesktop.org), as gnome-keyring and KeePassXC
// serve it on the session bus.
const (
	ssName       = "org.freedesktop.secrets"
	ssPath       = dbus.ObjectPath("/org/freedesktop/secrets")
	ssService    = "org.freedesktop.Secret.Service"
	ssCollection = "org.freedesktop.Secret.Collection"
	ssItem       = "org.freedesktop.Secret.Item"
	ssDefault    = dbus.ObjectPath("/org/freedesktop/secrets/aliases/default")
	noPrompt     = dbus.ObjectPath("/")
)

// errNoService is a session without a Secret Service.
var errNoService = errors.New("no Secret Service on the session bus")

// ssSecret is the Secret struct of the API: (oayays).
type ssSecret struct {
	Session     dbus.ObjectPath
	Parameters  []byte
	Value       []byte
	ContentType string
}

// secretServiceSealer gets the home's sealing key from the Secret Service,
// making and storing one the first time. The item is found by the attributes
// application=kule and kule-home=<home>.
func secretServiceSealer(home string) (Sealer, error) {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		return nil, errNoService
	}
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil, fmt.Errorf("session bus: %w", err)
	}
	defer conn.Close()
	var has bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, ssName).Store(&has); err != nil {
		return nil, fmt.Errorf("session bus: %w", err)
	}
	if !has {
		var names []string
		if err := conn.BusObject().Call("org.freedesktop.DBus.ListActivatableNames", 0).Store(&names); err != nil {
			return nil, errNoService
		}
		found := false
		for _, n := range names {
			found = found || n == ssName
		}
		if !found {
			return nil, errNoService
		}
	}
	svc := conn.Object(ssName, ssPath)
	var out dbus.Variant
	var session dbus.ObjectPath
	if err := svc.Call(ssService+".OpenSession", 0, "plain", dbus.MakeVariant("")).Store(&out, &session); err != nil {
		return nil, fmt.Errorf("secret service: open session: %w", err)
	}
	defer conn.Object(ssName, session).Call("org.freedesktop.Secret.Session.Close", 0)

	attrs := map[string]string{"application": "kule", "kule-home": home}
	var unlocked, locked []dbus.ObjectPath
	if err := svc.Call(ssService+".SearchItems", 0, attrs).Store(&unlocked, &locked); err != nil {
		return nil, fmt.Errorf("secret service: search: %w", err)
	}
	if len(unlocked) == 0 && len(locked) > 0 {
		var prompt dbus.ObjectPath
		if err := svc.Call(ssService+".Unlock", 0, locked).Store(&unlocked, &prompt); err != nil {
			return nil, fmt.Errorf("secret service: unlock: %w", err)
		}
		if len(unlocked) == 0 {
			return nil, errors.New("secret service: the keyring is locked and needs a prompt; unlock it first")
		}
	}
	desc := "Secret Service (item for " + home + ")"
	if len(unlocked) > 0 {
		var sec ssSecret
		if err := conn.Object(ssName, unlocked[0]).Call(ssItem+".GetSecret", 0, session).Store(&sec); err != nil {
			return nil, fmt.Errorf("secret service: get key: %w", err)
		}
		return newAEAD(sec.Value, SecretService, desc)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	props := map[string]dbus.Variant{
		ssItem + ".Label":      dbus.MakeVariant("Kule secrets key (" + home + ")"),
		ssItem + ".Attributes": dbus.MakeVariant(attrs),
	}
	var item, prompt dbus.ObjectPath
	err = conn.Object(ssName, ssDefault).Call(ssCollection+".CreateItem", 0, props,
		ssSecret{Session: session, Parameters: []byte{}, Value: key, ContentType: "application/octet-stream"}, false).Store(&item, &prompt)
	if err != nil {
		return nil, fmt.Errorf("secret service: store key: %w", err)
	}
	if item == noPrompt || item == "" {
		return nil, errors.New("secret service: storing the key needs a prompt; unlock the default keyring first")
	}
	return newAEAD(key, SecretService, desc)
}
