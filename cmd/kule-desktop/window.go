package main

// The window is GTK 3 with a WebKitGTK view, bound here directly through cgo:
// the dozen calls it needs do not justify a binding library, and the ones
// there are for Go are not available to this build. Every GTK call runs on
// the main OS thread (main locks it); Go reaches the loop only through
// g_idle_add.

/*
#cgo pkg-config: gtk+-3.0 webkit2gtk-4.1
#include <stdlib.h>
#include <gtk/gtk.h>
#include <webkit2/webkit2.h>

extern void kuleDesktopMenu(int action);
extern void kuleDesktopShot(int ok, char *text);
extern int kuleDesktopNavigate(char *uri, char *origin, int newWindow);

enum { ACT_BROWSER = 1, ACT_ABOUT = 2, ACT_LOG = 3 };

static GtkWidget *kd_window;
static WebKitWebView *kd_view;
static char *kd_shot_path;
static int kd_shot_tries;
static int kd_shot_busy;

static void kd_menu(GtkMenuItem *item, gpointer data) { kuleDesktopMenu(GPOINTER_TO_INT(data)); }
static void kd_reload(GtkMenuItem *item, gpointer data) { webkit_web_view_reload(kd_view); }
static void kd_close(GtkMenuItem *item, gpointer data) { gtk_widget_destroy(kd_window); }

static GtkWidget *kd_item(GtkWidget *menu, const char *label, GCallback cb, int action,
                          GtkAccelGroup *accel, guint key) {
	GtkWidget *it = gtk_menu_item_new_with_mnemonic(label);
	g_signal_connect(it, "activate", cb, GINT_TO_POINTER(action));
	if (key) gtk_widget_add_accelerator(it, "activate", accel, key, GDK_CONTROL_MASK, GTK_ACCEL_VISIBLE);
	gtk_menu_shell_append(GTK_MENU_SHELL(menu), it);
	return it;
}

static GtkWidget *kd_menubar(GtkAccelGroup *accel) {
	GtkWidget *bar = gtk_menu_bar_new();
	GtkWidget *kule = gtk_menu_new();
	kd_item(kule, "Open in a _browser", G_CALLBACK(kd_menu), ACT_BROWSER, accel, 0);
	kd_item(kule, "_Reload", G_CALLBACK(kd_reload), 0, accel, GDK_KEY_r);
	kd_item(kule, "Daemon _log", G_CALLBACK(kd_menu), ACT_LOG, accel, 0);
	gtk_menu_shell_append(GTK_MENU_SHELL(kule), gtk_separator_menu_item_new());
	// Closing the window stops nothing: the daemon and its runs go on.
	kd_item(kule, "_Close window", G_CALLBACK(kd_close), 0, accel, GDK_KEY_w);
	GtkWidget *top = gtk_menu_item_new_with_mnemonic("_Kule");
	gtk_menu_item_set_submenu(GTK_MENU_ITEM(top), kule);
	gtk_menu_shell_append(GTK_MENU_SHELL(bar), top);

	GtkWidget *help = gtk_menu_new();
	kd_item(help, "_About Kule", G_CALLBACK(kd_menu), ACT_ABOUT, accel, 0);
	GtkWidget *htop = gtk_menu_item_new_with_mnemonic("_Help");
	gtk_menu_item_set_submenu(GTK_MENU_ITEM(htop), help);
	gtk_menu_shell_append(GTK_MENU_SHELL(bar), htop);
	return bar;
}

// A link that leaves the control room opens in the person's browser, never
// inside the window.
static gboolean kd_decide(WebKitWebView *v, WebKitPolicyDecision *d, WebKitPolicyDecisionType type, gpointer origin) {
	if (type != WEBKIT_POLICY_DECISION_TYPE_NAVIGATION_ACTION && type != WEBKIT_POLICY_DECISION_TYPE_NEW_WINDOW_ACTION)
		return FALSE;
	WebKitNavigationAction *a = webkit_navigation_policy_decision_get_navigation_action(WEBKIT_NAVIGATION_POLICY_DECISION(d));
	const char *uri = webkit_uri_request_get_uri(webkit_navigation_action_get_request(a));
	if (!uri)
		uri = "";
	// What happens is decided in Go (navigation.go), where it is tested.
	switch (kuleDesktopNavigate((char *)uri, (char *)origin, type == WEBKIT_POLICY_DECISION_TYPE_NEW_WINDOW_ACTION)) {
	case 0: // stays in the window
		return FALSE;
	case 1: // the person's browser
		gtk_show_uri_on_window(GTK_WINDOW(kd_window), uri, GDK_CURRENT_TIME, NULL);
		break;
	}
	webkit_policy_decision_ignore(d);
	return TRUE;
}

// The screenshot: once the task list has rows, the whole screen (window and
// menu bar) is read back through GDK and written as a PNG.
static gboolean kd_capture(gpointer text) {
	GdkWindow *root = gdk_get_default_root_window();
	GdkPixbuf *pb = gdk_pixbuf_get_from_window(root, 0, 0, gdk_window_get_width(root), gdk_window_get_height(root));
	GError *err = NULL;
	int ok = pb && gdk_pixbuf_save(pb, kd_shot_path, "png", &err, NULL);
	if (pb) g_object_unref(pb);
	if (err) g_error_free(err);
	kuleDesktopShot(ok, (char *)text);
	g_free(text);
	gtk_main_quit();
	return G_SOURCE_REMOVE;
}

static void kd_probed(GObject *obj, GAsyncResult *res, gpointer data) {
	kd_shot_busy = 0;
	JSCValue *v = webkit_web_view_evaluate_javascript_finish(kd_view, res, NULL);
	if (!v) return;
	char *s = jsc_value_to_string(v);
	g_object_unref(v);
	if (s && s[0] && s[0] != '0') {
		// one more second for the rows' layout and fonts to settle on screen
		g_timeout_add(1000, kd_capture, s);
		kd_shot_tries = -1;
		return;
	}
	g_free(s);
}

static gboolean kd_probe(gpointer data) {
	if (kd_shot_tries < 0) return G_SOURCE_REMOVE;
	if (++kd_shot_tries > 300) { // a minute without a task list
		kuleDesktopShot(0, "the task list never showed");
		gtk_main_quit();
		return G_SOURCE_REMOVE;
	}
	if (kd_shot_busy) return G_SOURCE_CONTINUE;
	kd_shot_busy = 1;
	webkit_web_view_evaluate_javascript(kd_view,
		"(() => { const l = document.querySelectorAll('#task-list li'); return l.length ? l.length + '\\n' + document.getElementById('task-list').innerText : '0'; })()",
		-1, NULL, NULL, NULL, kd_probed, NULL);
	return G_SOURCE_CONTINUE;
}

static void kd_destroyed(GtkWidget *w, gpointer data) { gtk_main_quit(); }

static void kd_run(char *url, char *origin, char *title, char *shot, int width, int height) {
	gtk_init(NULL, NULL);
	kd_window = gtk_window_new(GTK_WINDOW_TOPLEVEL);
	gtk_window_set_title(GTK_WINDOW(kd_window), title);
	gtk_window_set_default_size(GTK_WINDOW(kd_window), width, height);
	gtk_window_set_icon_name(GTK_WINDOW(kd_window), "kule");
	g_signal_connect(kd_window, "destroy", G_CALLBACK(kd_destroyed), NULL);
	GtkAccelGroup *accel = gtk_accel_group_new();
	gtk_window_add_accel_group(GTK_WINDOW(kd_window), accel);

	kd_view = WEBKIT_WEB_VIEW(webkit_web_view_new());
	WebKitSettings *s = webkit_web_view_get_settings(kd_view);
	webkit_settings_set_enable_developer_extras(s, TRUE);
	webkit_settings_set_javascript_can_access_clipboard(s, TRUE);
	g_signal_connect(kd_view, "decide-policy", G_CALLBACK(kd_decide), origin);

	GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
	gtk_box_pack_start(GTK_BOX(box), kd_menubar(accel), FALSE, FALSE, 0);
	gtk_box_pack_start(GTK_BOX(box), GTK_WIDGET(kd_view), TRUE, TRUE, 0);
	gtk_container_add(GTK_CONTAINER(kd_window), box);
	webkit_web_view_load_uri(kd_view, url);
	gtk_widget_show_all(kd_window);
	if (shot) {
		kd_shot_path = shot;
		gtk_window_move(GTK_WINDOW(kd_window), 0, 0);
		g_timeout_add(200, kd_probe, NULL);
	}
	gtk_main();
}

static gboolean kd_about_idle(gpointer version) {
	gtk_show_about_dialog(GTK_WINDOW(kd_window), "program-name", "Kule", "version", (char *)version,
		"comments", "A control room for the tasks Kule runs in their sandboxes.\nClosing this window stops nothing.",
		"logo-icon-name", "kule", NULL);
	free(version);
	return G_SOURCE_REMOVE;
}
static void kd_about(char *version) { g_idle_add(kd_about_idle, version); }

static void kd_error(char *title, char *msg) {
	if (!gtk_init_check(NULL, NULL)) return;
	GtkWidget *d = gtk_message_dialog_new(NULL, 0, GTK_MESSAGE_ERROR, GTK_BUTTONS_CLOSE, "%s", title);
	gtk_message_dialog_format_secondary_text(GTK_MESSAGE_DIALOG(d), "%s", msg);
	gtk_dialog_run(GTK_DIALOG(d));
	gtk_widget_destroy(d);
}
*/
import "C"

import (
	"unsafe"
)

// menu actions the C side hands to Go
const (
	actBrowser = C.ACT_BROWSER
	actAbout   = C.ACT_ABOUT
	actLog     = C.ACT_LOG
)

// window is what the GTK side calls back into; one per process.
var window struct {
	onMenu func(action int)
	onShot func(ok bool, text string)
}

//export kuleDesktopMenu
func kuleDesktopMenu(action C.int) {
	if window.onMenu != nil {
		go window.onMenu(int(action)) // never block the GTK loop
	}
}

//export kuleDesktopNavigate
func kuleDesktopNavigate(uri, origin *C.char, newWindow C.int) C.int {
	return C.int(navigate(C.GoString(uri), C.GoString(origin), newWindow != 0))
}

//export kuleDesktopShot
func kuleDesktopShot(ok C.int, text *C.char) {
	if window.onShot != nil {
		window.onShot(ok != 0, C.GoString(text))
	}
}

// runWindow shows the window on url and returns when it is closed. With
// shot set it writes a screenshot there once the task list shows, and
// closes.
func runWindow(url, origin, title, shot string, width, height int) {
	cs := func(s string) *C.char { return C.CString(s) } // kept for the window's life
	var cshot *C.char
	if shot != "" {
		cshot = cs(shot)
	}
	C.kd_run(cs(url), cs(origin), cs(title), cshot, C.int(width), C.int(height))
}

// showAbout opens the About dialog (from any goroutine).
func showAbout(version string) { C.kd_about(C.CString(version)) }

// showError puts an error in a dialog where there is a display (a window
// opened from a launcher has no terminal to print to).
func showError(title, msg string) {
	ct, cm := C.CString(title), C.CString(msg)
	defer C.free(unsafe.Pointer(ct))
	defer C.free(unsafe.Pointer(cm))
	C.kd_error(ct, cm)
}
