package netpolicy

import (
	"net/netip"
	"testing"
)

func TestInternal(t *testing.T) {
	for addr, want := range map[string]bool{
		"169.254.169.254": true, "127.0.0.1": true, "127.8.9.10": true, "::1": true, "10.0.0.5": true,
		"172.16.3.4": true, "172.31.255.255": true, "192.168.1.1": true, "100.64.0.1": true, "100.127.255.254": true,
		"0.0.0.0": true, "0.1.2.3": true, "::": true, "224.0.0.1": true, "ff02::1": true, "fe80::1": true,
		"fd00::1": true, "fc00::2": true, "::ffff:127.0.0.1": true, "::ffff:169.254.169.254": true,
		"93.184.215.14": false, "8.8.8.8": false, "172.32.0.1": false, "100.128.0.1": false,
		"2606:2800:21f:cb07:6820:80da:af6b:8b2c": false, "::ffff:8.8.8.8": false,
	} {
		if got := Internal(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Internal(%s) = %t, want %t", addr, got, want)
		}
	}
}

func TestHostAddr(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1": "127.0.0.1", "[::1]": "::1", "::1": "::1", "127.1": "127.0.0.1", "0x7f.0.0.1": "127.0.0.1",
		"0177.0.0.1": "127.0.0.1", "2130706433": "127.0.0.1", "0xA9FEA9FE": "169.254.169.254",
		"169.254.43518": "169.254.169.254", "10.0.0.5.": "10.0.0.5", "localhost": "127.0.0.1",
		"LOCALHOST.": "127.0.0.1", "app.localhost": "127.0.0.1", "[fe80::1%25eth0]": "fe80::1",
		"fe80::1%eth0": "fe80::1", "[::ffff:127.0.0.1]": "::ffff:127.0.0.1", "0": "0.0.0.0", "0x": "0.0.0.0",
	} {
		got, ok := HostAddr(host)
		if !ok || got != netip.MustParseAddr(want) {
			t.Errorf("HostAddr(%q) = %v, %t; want %s", host, got, ok, want)
		}
	}
	for _, host := range []string{"example.com", "127.0.0.1.example.com", "1.2.3.4.5", "256.1.1.1", "1.2.65536",
		"localhost.example", "09.1.1.1", "", "a.b", "xn--localhost"} {
		if got, ok := HostAddr(host); ok {
			t.Errorf("HostAddr(%q) = %v, want a name to resolve", host, got)
		}
	}
}

func TestAllowList(t *testing.T) {
	a, err := ParseAllowList(" 10.1.0.0/16, 192.168.5.5 ,fd00:1::/32, ::ffff:172.20.0.0/112")
	if err != nil {
		t.Fatal(err)
	}
	for addr, refused := range map[string]bool{
		"10.1.2.3": false, "10.2.0.1": true, "192.168.5.5": false, "192.168.5.6": true,
		"fd00:1::9": false, "fd00:2::9": true, "172.20.1.1": false, "::ffff:10.1.9.9": false,
		"169.254.169.254": true, "8.8.8.8": false,
	} {
		if got := a.Refuses(netip.MustParseAddr(addr)); got != refused {
			t.Errorf("Refuses(%s) = %t, want %t", addr, got, refused)
		}
	}
	if !(AllowList{}).Refuses(netip.MustParseAddr("127.0.0.1")) {
		t.Error("an empty allow-list lets loopback through")
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0.0/8;"} {
		if _, err := ParseAllowList(bad); err == nil {
			t.Errorf("ParseAllowList(%q) took it", bad)
		}
	}
}
