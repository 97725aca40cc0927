//! A point of a session to rewind to: before a turn (`3`), or before one shell call of a turn
//! (`3.2`, the second shell call of turn 3), as `/rewind` lists them.

use std::{fmt, str::FromStr};

/// Before turn `turn`, or before its `call`-th shell call (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub turn: u64,
    pub call: Option<u64>,
}

impl Point {
    /// Before turn `turn`.
    pub fn turn(turn: u64) -> Self {
        Self { turn, call: None }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.call {
            Some(call) => write!(f, "{}.{call}", self.turn),
            None => write!(f, "{}", self.turn),
        }
    }
}

impl FromStr for Point {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "`{s}` is not a point to rewind to: write TURN (e.g. 3) or TURN.CALL for the \
                 state before a shell call of that turn (e.g. 3.2); the listing shows them"
            )
        };
        let number = |t: &str| t.parse::<u64>().ok().filter(|n| *n > 0);
        match s.split_once('.') {
            None => number(s).map(Point::turn).ok_or_else(bad),
            Some((turn, call)) => match (number(turn), number(call)) {
                (Some(turn), Some(call)) => Ok(Point {
                    turn,
                    call: Some(call),
                }),
                _ => Err(bad()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_parse_and_print_back() {
        for s in ["3", "3.2", "12.10"] {
            assert_eq!(s.parse::<Point>().unwrap().to_string(), s);
        }
        assert_eq!(
            "2.1".parse(),
            Ok(Point {
                turn: 2,
                call: Some(1)
            })
        );
        for bad in ["", "0", "x", "2.", ".1", "2.0", "1.2.3", "-1"] {
            let err = bad.parse::<Point>().unwrap_err();
            assert!(err.contains("TURN.CALL"), "{bad}: {err}");
        }
    }
}
