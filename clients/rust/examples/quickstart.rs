use memsidecar_client::{pb, Client, Options};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), memsidecar_client::Error> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:50051".into());
    if addr == "--help" || addr == "-h" {
        println!("quickstart [ADDR]: stores one memory and prints the block of one question.");
        return Ok(());
    }
    let client = Client::connect(&addr, Options::default()).await?;
    let memory = pb::Memory { id: "quickstart-rust".into(), r#type: pb::MemoryType::Fact as i32,
        content: "Invoices of the Rust quickstart are written to S3 every night.".into(), ..Default::default() };
    client.upsert(memory).await?;
    client.reset_channel("quickstart-rust").await?; // a new conversation on this channel
    let request = pb::InjectRequest { channel_id: "quickstart-rust".into(),
        text: "When are the Rust quickstart's invoices written?".into(), ..Default::default() };
    println!("{}", client.inject(&request).await?.block);
    Ok(())
}
