"""pychromecast_serialized: imported before pychromecast is used, it lets each TLS socket take one call at a time.

pychromecast 14 reads its Cast connection on a thread of its own and writes to it from whichever thread sends: the
caller's, and its own when a status arrives (a media controller asks GET_STATUS as it connects). OpenSSL allows one
call at a time on a connection. Under load the two met in the lab: the test receiver read a corrupt record
("decryption failed or bad record mac") just after a LAUNCH and closed, and the sender saw "EOF occurred in violation
of protocol" (the cattCastsToTheTestReceiver and pychromecast flakes). pychromecast's users have met it too (integrations
that put a lock around its socket). The tests' senders — Tests/LabTools/cast-sender and catt — run with this lock, so a
test fails on the receiver or on route, not on the sender's own race.
"""
import ssl
import threading

_ONE_AT_A_TIME = threading.RLock()  # reentrant: sendall calls send


def _serialized(method):
    def call(self, *args, **kwargs):
        with _ONE_AT_A_TIME:
            return method(self, *args, **kwargs)

    call.__name__ = method.__name__
    return call


for _name in ("send", "sendall", "recv", "recv_into", "read", "write", "do_handshake", "unwrap"):
    setattr(ssl.SSLSocket, _name, _serialized(getattr(ssl.SSLSocket, _name)))
