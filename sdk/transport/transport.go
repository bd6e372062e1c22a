// Package transport is what a chat cockpit plugin (Slack, Discord)
// implements: the Transport interface and the plain Go types of the
// transport protocol (sdk/proto/transport/v1), so the wire can move without
// breaking plugin authors. Its main is one line:
//
//	func main() { plugin.ServeTransport(myTransport{}) }
//
// The lifecycle of a transport, as the host drives it:
//
//  1. the host starts the plugin and calls Info once: the name and the
//     optional abilities (buttons, edits, files);
//  2. the host calls Receive in a loop, passing back the cursor it got, and
//     turns what people wrote into Kule's intents;
//  3. the host calls Deliver for every event a person in the chat should see,
//     from any goroutine, at any time after Info;
//  4. the host ends the plugin; a transport keeps nothing it must flush.
//
// A transport carries; it never decides. It names people by their chat id
// and leaves who is the operator to the host, and it recognises no intent
// by the meaning of words: a thread reply is a reply, a slash command is a
// command, a button press is a choice.
package transport

import (
	"context"
	"errors"
)

// Capability is an optional ability a transport announces.
type Capability string

// Capabilities.
const (
	// CapButtons: questions are answered with buttons (Question.Choices).
	CapButtons Capability = "buttons"
	// CapEdit: Deliver with Replaces edits an earlier message.
	CapEdit Capability = "edit"
	// CapFiles: events can carry files.
	CapFiles Capability = "files"
)

// Sentinel errors.
var (
	// ErrEmptyEvent: an event with no notice, question or file.
	ErrEmptyEvent = errors.New("transport: event has no body")
)

// Info is what a transport says about itself.
type Info struct {
	Name         string
	Capabilities []Capability
}

// Has reports whether the transport announced c.
func (i Info) Has(c Capability) bool {
	for _, x := range i.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

// Event is something Kule tells the people in the chat. Exactly one of
// Notice, Question and File is set.
type Event struct {
	ID       string    // stable id, for answers (Incoming.InReplyTo) and edits
	Task     string    // the task it is about, "" for Kule itself
	Thread   string    // the thread to post in; "" opens a new one
	Channel  string    // "" = the transport's configured channel
	Notice   *Notice   //
	Question *Question //
	File     *File     //
}

// Notice is a message.
type Notice struct{ Text string }

// Question waits for a choice (buttons) or, with no choices, a reply.
type Question struct {
	Text    string
	Choices []string
}

// File is an attachment: output too long for a message.
type File struct {
	Name    string
	Content []byte
	Comment string
}

// Delivered is where a delivered event landed.
type Delivered struct {
	Ref    string // the chat's reference of the message
	Thread string // the thread it is in (Ref itself for a top-level message)
}

// Incoming is something a person wrote in the chat.
type Incoming struct {
	Author    string // the chat's id of who wrote it
	InReplyTo string // the event it answers (a question's id), if any
	Text      string
	Choice    string // the button pressed
	Thread    string // the thread it was written in; "" for top level
	Ref       string // the message's own reference
	Channel   string
	Direct    bool   // a direct message to the bot
	Command   string // a slash command's verb; its arguments are in Text
}

// Batch is what one Receive returns.
type Batch struct {
	Incoming []Incoming
	Cursor   string // pass back to the next Receive
}

// Transport is a chat cockpit.
type Transport interface {
	Info(ctx context.Context) (Info, error)
	// Deliver posts ev; replaces, when not "", is the Ref of an earlier
	// delivery to edit instead (CapEdit).
	Deliver(ctx context.Context, ev Event, replaces string) (Delivered, error)
	// Receive returns what arrived after cursor ("" = from the start of this
	// process), waiting until something does, ctx ends or wait passes.
	Receive(ctx context.Context, cursor string, waitMillis int64) (Batch, error)
}

// Check says what is wrong with ev, if anything.
func (ev Event) Check() error {
	n := 0
	if ev.Notice != nil {
		n++
	}
	if ev.Question != nil {
		n++
	}
	if ev.File != nil {
		n++
	}
	if n != 1 {
		return ErrEmptyEvent
	}
	return nil
}
