import StoreAPI
