//! Styles, with colours or, under `NO_COLOR`, with bold, reverse and text markers only.

use ratatui::style::{Color, Modifier, Style};

/// The styles the panes use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    /// Colours allowed.
    pub color: bool,
}

impl Theme {
    /// Colours unless `NO_COLOR` is set to a non-empty value (<https://no-color.org>).
    pub fn from_env() -> Self {
        Self {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    /// With colours.
    pub fn colored() -> Self {
        Self { color: true }
    }

    /// Without colours.
    pub fn mono() -> Self {
        Self { color: false }
    }

    fn pick(self, color: Style, mono: Style) -> Style {
        if self.color { color } else { mono }
    }

    /// Border and title of the focused pane.
    pub fn focused(self) -> Style {
        self.pick(
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            Style::new().add_modifier(Modifier::BOLD),
        )
    }

    /// The selected row.
    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    /// A bit or value changed since the last callback.
    pub fn changed(self) -> Style {
        self.pick(
            Style::new()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
        )
    }

    /// Marker after a changed item (only without colours, where reverse alone may be lost).
    pub fn changed_marker(self) -> &'static str {
        if self.color { "" } else { "*" }
    }

    /// Errors, lost events, link down.
    pub fn bad(self) -> Style {
        self.pick(
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            Style::new().add_modifier(Modifier::BOLD),
        )
    }

    /// Link up, attached.
    pub fn good(self) -> Style {
        self.pick(Style::new().fg(Color::Green), Style::new())
    }

    /// Secondary text: timestamps, hints.
    pub fn dim(self) -> Style {
        self.pick(Style::new().fg(Color::DarkGray), Style::new())
    }

    /// Names: callbacks, registers.
    pub fn name(self) -> Style {
        self.pick(
            Style::new().fg(Color::Cyan),
            Style::new().add_modifier(Modifier::BOLD),
        )
    }

    /// A search match.
    pub fn matched(self) -> Style {
        self.pick(
            Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD),
            Style::new().add_modifier(Modifier::UNDERLINED | Modifier::BOLD),
        )
    }
}
