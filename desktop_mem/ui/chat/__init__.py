"""The Chat pane: the transcript, its messages and what each reply used and changed."""
