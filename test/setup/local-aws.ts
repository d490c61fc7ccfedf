/**
 * Fixed fake credentials and region for the local AWS peers: DynamoDB Local partitions its data
 * by access key and region, so every client of one test run must use the same.
 */
export const LOCAL_REGION = "us-east-1";
export const LOCAL_CREDENTIALS = { accessKeyId: "waymarklocal", secretAccessKey: "waymarklocal" };
