//! Who may ask the bandwidth manager for what (an extension: Löser/Härtig §3.2 trust every host
//! that can reach the manager). A client presents a bearer token in every request; the
//! manager's [`Tokens`] table maps it to a [`Caller`] — a principal and a [`Role`]. A booking
//! records the principal that made it, and [`Caller::may_manage`] is the one ownership rule:
//! a `client` may release, refresh and list only its own bookings, an `operator` every booking.
//!
//! With no tokens configured the manager is open (as before tokens existed): every request is
//! [`Caller::anonymous`], an operator named [`ANONYMOUS`]. Tokens are compared in constant time
//! (`subtle`), and every configured token is compared, so the time taken does not tell which
//! token, or which prefix of one, was close.

use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

/// The principal of requests in open mode (no tokens configured), and the owner of bookings
/// persisted before bookings had owners.
pub const ANONYMOUS: &str = "anonymous";

/// The owner of the standing reservations (booked by the manager itself at start).
pub const MANAGER: &str = "manager";

/// What a principal may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Books, and releases, refreshes and lists its own bookings.
    Client,
    /// Everything a client may, on every booking.
    Operator,
}

/// The authenticated sender of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The principal a booking made by this caller records as its owner.
    pub principal: String,
    /// What it may do.
    pub role: Role,
}

impl Caller {
    /// The caller of every request when no tokens are configured: an operator, so the open
    /// manager behaves as it did before tokens.
    pub fn anonymous() -> Caller {
        Caller {
            principal: ANONYMOUS.to_string(),
            role: Role::Operator,
        }
    }

    /// Whether this caller may release, refresh or see a booking owned by `owner`.
    pub fn may_manage(&self, owner: &str) -> bool {
        self.role == Role::Operator || self.principal == owner
    }
}

/// One configured token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenEntry {
    /// The secret a client presents (the request's `token` field).
    pub token: String,
    /// Who presents it (recorded as the owner of its bookings).
    pub principal: String,
    /// What it may do.
    pub role: Role,
}

impl std::fmt::Debug for TokenEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret never goes into a log line.
        f.debug_struct("TokenEntry")
            .field("token", &"<redacted>")
            .field("principal", &self.principal)
            .field("role", &self.role)
            .finish()
    }
}

/// Why a token table cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokensError {
    /// A token is empty (it would let a request without a token in).
    #[error("token of principal `{0}` is empty")]
    EmptyToken(String),
    /// A principal name is empty or is reserved for the manager's own bookings.
    #[error("principal `{0}` is empty or reserved")]
    BadPrincipal(String),
    /// Two entries share a token, so it would not name one principal.
    #[error("principals `{0}` and `{1}` share a token")]
    DuplicateToken(String, String),
}

/// A request carried no token, or one that is not configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The request has no `token` field.
    #[error("this manager requires a `token` in every request")]
    Missing,
    /// The token is not one of the configured ones.
    #[error("unknown token")]
    Unknown,
}

/// The manager's token table (empty = open mode).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tokens {
    entries: Vec<TokenEntry>,
}

impl Tokens {
    /// A table of `entries`; refuses empty tokens, empty or reserved principals and shared
    /// tokens.
    pub fn new(entries: Vec<TokenEntry>) -> Result<Tokens, TokensError> {
        for (i, e) in entries.iter().enumerate() {
            if e.token.is_empty() {
                return Err(TokensError::EmptyToken(e.principal.clone()));
            }
            if e.principal.is_empty() || e.principal == MANAGER || e.principal == ANONYMOUS {
                return Err(TokensError::BadPrincipal(e.principal.clone()));
            }
            if let Some(other) = entries[..i].iter().find(|o| o.token == e.token) {
                return Err(TokensError::DuplicateToken(
                    other.principal.clone(),
                    e.principal.clone(),
                ));
            }
        }
        Ok(Tokens { entries })
    }

    /// True if no token is configured (open mode).
    pub fn is_open(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many tokens are configured.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if no token is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The caller presenting `token`: [`Caller::anonymous`] in open mode (a token is then
    /// ignored), else the principal whose token matches, compared in constant time against
    /// every entry.
    pub fn authenticate(&self, token: Option<&str>) -> Result<Caller, AuthError> {
        if self.is_open() {
            return Ok(Caller::anonymous());
        }
        let token = token.ok_or(AuthError::Missing)?;
        let mut found = None;
        for e in &self.entries {
            // `ct_eq` on slices of different lengths is false without comparing bytes; only
            // the length of the configured tokens can leak, never their content.
            if bool::from(e.token.as_bytes().ct_eq(token.as_bytes())) {
                found = Some(e);
            }
        }
        found
            .map(|e| Caller {
                principal: e.principal.clone(),
                role: e.role,
            })
            .ok_or(AuthError::Unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(token: &str, principal: &str, role: Role) -> TokenEntry {
        TokenEntry {
            token: token.into(),
            principal: principal.into(),
            role,
        }
    }

    #[test]
    fn open_table_lets_everyone_in_as_the_anonymous_operator() {
        let t = Tokens::default();
        assert!(t.is_open());
        assert_eq!(t.authenticate(None), Ok(Caller::anonymous()));
        assert_eq!(t.authenticate(Some("whatever")), Ok(Caller::anonymous()));
        assert!(Caller::anonymous().may_manage("someone"));
    }

    #[test]
    fn tokens_name_their_principal_and_nothing_else_gets_in() {
        let t = Tokens::new(vec![
            entry("s3cret-a", "host-a", Role::Client),
            entry("s3cret-op", "alice", Role::Operator),
        ])
        .expect("valid");
        let a = t.authenticate(Some("s3cret-a")).expect("known");
        assert_eq!((a.principal.as_str(), a.role), ("host-a", Role::Client));
        let op = t.authenticate(Some("s3cret-op")).expect("known");
        assert_eq!(op.role, Role::Operator);
        assert_eq!(t.authenticate(None), Err(AuthError::Missing));
        for bad in ["", "s3cret", "s3cret-a ", "S3CRET-A", "s3cret-ab"] {
            assert_eq!(
                t.authenticate(Some(bad)),
                Err(AuthError::Unknown),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn ownership_rule() {
        let client = Caller {
            principal: "host-a".into(),
            role: Role::Client,
        };
        assert!(client.may_manage("host-a"));
        assert!(!client.may_manage("host-b"));
        assert!(!client.may_manage(ANONYMOUS));
        let op = Caller {
            principal: "alice".into(),
            role: Role::Operator,
        };
        assert!(op.may_manage("host-b") && op.may_manage(MANAGER));
    }

    #[test]
    fn bad_tables_are_refused() {
        assert!(matches!(
            Tokens::new(vec![entry("", "a", Role::Client)]),
            Err(TokensError::EmptyToken(_))
        ));
        for p in ["", MANAGER, ANONYMOUS] {
            assert!(matches!(
                Tokens::new(vec![entry("t", p, Role::Client)]),
                Err(TokensError::BadPrincipal(_))
            ));
        }
        assert!(matches!(
            Tokens::new(vec![
                entry("t", "a", Role::Client),
                entry("t", "b", Role::Operator)
            ]),
            Err(TokensError::DuplicateToken(_, _))
        ));
        assert!(!format!("{:?}", entry("topsecret", "a", Role::Client)).contains("topsecret"));
    }
}
