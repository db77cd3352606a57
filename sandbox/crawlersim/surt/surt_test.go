package surt

import "testing"

// TestSURT compares Key with what Python's surt.surt returns. The first
// group is asserted in surt's own test suite and README; the second
// feeds whole URLs through the cases of its canonicalizer tests (ported
// from the Java original), whose SURTs follow from them; the last are
// URLs the simulator captures.
func TestSURT(t *testing.T) {
	const sid32 = "0123456789abcdefghijklemopqrstuv"
	for _, tc := range []struct{ url, want string }{
		// surt's test_surt and README.
		{"", "-"},
		{"filedesc:foo.arc.gz", "filedesc:foo.arc.gz"},
		{"filedesc://foo.arc.gz", "filedesc://foo.arc.gz"},
		{"warcinfo:foo.warc.gz", "warcinfo:foo.warc.gz"},
		{"dns:archive.org", "dns:archive.org"},
		{"mailto:foo@example.com", "mailto:foo@example.com"},
		{"http://www.archive.org/", "org,archive)/"},
		{"http://archive.org/", "org,archive)/"},
		{"http://archive.org/goo/", "org,archive)/goo"},
		{"http://archive.org/goo/?", "org,archive)/goo"},
		{"http://archive.org/goo/?b&a", "org,archive)/goo?a&b"},
		{"http://archive.org/goo/?a=2&b&a=1", "org,archive)/goo?a=1&a=2&b"},
		{"http://123.456.78.910/goo/?a=2&b&a=1", "910,78,456,123)/goo?a=1&a=2&b"},
		{"http://archive.org/index.php?PHPSESSID=" + sid32 + "&action=profile;u=4221", "org,archive)/index.php?action=profile;u=4221"},
		{"http://visit.webhosting.yahoo.com/visit.gif?&r=http%3A//web.archive.org/web/20090517140029/http%3A//anthonystewarthead.electric-chi.com/&b=Netscape%205.0%20%28Windows%3B%20en-US%29&s=1366x768&o=Win32&c=24&j=true&v=1.2",
			"com,yahoo,webhosting,visit)/visit.gif?&b=netscape%205.0%20(windows;%20en-us)&c=24&j=true&o=win32&r=http://web.archive.org/web/20090517140029/http://anthonystewarthead.electric-chi.com/&s=1366x768&v=1.2"},
		{"http://www.example.com/", "com,example)/"},

		// GoogleURLCanonicalizer cases.
		{"http://host/%25%32%35", "host)/%25"},
		{"http://host/%25%32%35%25%32%35", "host)/%25%25"},
		{"http://host/%2525252525252525", "host)/%25"},
		{"http://host/%%%25%32%35asd%%", "host)/%25%25%25asd%25%25"},
		{"http://%31%36%38%2e%31%38%38%2e%39%39%2e%32%36/%2E%73%65%63%75%72%65/%77%77%77%2E%65%62%61%79%2E%63%6F%6D/", "26,99,188,168)/.secure/www.ebay.com"},
		{"http://host%23.com/%257Ea%2521b%2540c%2523d%2524e%25f%255E00%252611%252A22%252833%252944_55%252B", "com,host%23)/~a!b@c%23d$e%25f^00&11*22(33)44_55+"},
		{"http://3279880203/blah", "11,0,127,195)/blah"},
		{"http://www.google.com/blah/..", "com,google)/"},
		{"www.google.com/", "com,google)/"},
		{"www.google.com", "com,google)/"},
		{"http://www.evil.com/blah#frag", "com,evil)/blah"},
		{"http://www.GOOgle.com/", "com,google)/"},
		{"http://www.google.com.../", "com,google)/"},
		{"http://www.google.com/foo\tbar\rbaz\n2", "com,google)/foobarbaz2"},
		{"http://www.google.com/q?r?s", "com,google)/q?r?s"},
		{"http://evil.com/foo#bar#baz", "com,evil)/foo"},
		{"http://evil.com/foo;", "com,evil)/foo;"},
		{"http://notrailingslash.com", "com,notrailingslash)/"},
		{"http://www.gotaport.com:1234/", "com,gotaport:1234)/"},
		{"  http://www.google.com/  ", "com,google)/"},
		{"http://host.com/ab%23cd", "com,host)/ab%23cd"},
		{"http://host.com//twoslashes?more//slashes", "com,host)/twoslashes?more//slashes"},

		// IAURLCanonicalizer cases.
		{"http://ArChIvE.oRg/", "org,archive)/"},
		{"http://www.archive.org:80/", "org,archive)/"},
		{"https://www.archive.org:80/", "org,archive:80)/"},
		{"http://www.archive.org:443/", "org,archive:443)/"},
		{"https://www.archive.org:443/", "org,archive)/"},
		{"http://www.archive.org/big/", "org,archive)/big"},
		{"http://www12.foo.com/", "com,foo)/"},
		{"http://www2foo.com/", "com,www2foo)/"},
		{"http://www2.www2foo.com/", "com,www2foo)/"},
		{"http://x.com/?a=1&", "com,x)/?&a=1"},
		{"http://x.com/?b=b&a=b&b=a&a=a", "com,x)/?a=a&a=b&b=a&b=b"},
		{"http://x.com/(S(4hqa0555fwsecu455xqckv45))/mileg.aspx", "com,x)/mileg.aspx"},
		{"http://x.com/(4hqa0555fwsecu455xqckv45)/mileg.aspx", "com,x)/mileg.aspx"},
		{"http://x.com/(a(4hqa0555fwsecu455xqckv45)S(4hqa0555fwsecu455xqckv45)f(4hqa0555fwsecu455xqckv45))/mileg.aspx?page=sessionschedules", "com,x)/mileg.aspx?page=sessionschedules"},
		{"http://x.com/photos/36050182@N05/", "com,x)/photos/36050182@n05"},
		{"http://x.com/?jsessionid=" + sid32, "com,x)/"},
		{"http://x.com/?jsessionid=" + sid32 + "0", "com,x)/?jsessionid=" + sid32 + "0"},
		{"http://x.com/?one=two&jsessionid=" + sid32 + "&x=y", "com,x)/?one=two&x=y"},
		{"http://x.com/?aspsessionidABCDEFGH=ABCDEFGHIJKLMNOPQRSTUVWX&x=y", "com,x)/?x=y"},
		{"http://x.com/?sid=9682993c8daa2c5497996114facdc805&jsessionid=" + sid32, "com,x)/"},
		{"http://x.com/?CFID=1169580&CFTOKEN=48630702&dtstamp=22%2F08%2F2006%7C06%3A58%3A11", "com,x)/?dtstamp=22/08/2006|06:58:11"},
		{"http://x.com/?CFID=14475712&CFTOKEN=2D89F5AF-3048-2957-DA4EE4B6B13661AB&r=468710288378&m=forgotten", "com,x)/?m=forgotten&r=468710288378"},

		// What the simulator captures.
		{"https://example.com/?sim-pages=20", "com,example)/?sim-pages=20"},
		{"https://example.com/docs/?sim-pages=4&sim-links=3", "com,example)/docs?sim-links=3&sim-pages=4"},
		{"https://example.org/search?q=a&b=c&sim-pages=1", "org,example)/search?b=c&q=a&sim-pages=1"},
		{"https://example.com/docs/sim/12", "com,example)/docs/sim/12"},
		{"https://sim-sub.example.com/1/0", "com,example,sim-sub)/1/0"},
		{"http://127.0.0.1:8000/sim-static/style.css", "1,0,0,127:8000)/sim-static/style.css"},
		{"https://user:pw@Example.com/Caf%C3%A9/a b/", "com,example)/caf%c3%a9/a%20b"},
	} {
		if got := Key(tc.url); got != tc.want {
			t.Errorf("Key(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}
