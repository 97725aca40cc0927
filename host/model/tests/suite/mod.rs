mod anthropic_errors;
mod anthropic_fixtures;
mod anthropic_requests;
mod common;
mod config;
mod openai;
mod responses;
mod streaming;
